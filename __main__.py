from scribe.cli.app import main

main()
