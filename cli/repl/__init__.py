"""The interactive session: `loop` reads lines and runs turns, `input` reads keys, `view` draws
what the agent does, `approve` asks before writes and commands, `commands` are the slash
commands, `stats` and `records` are the figures and history it shows."""
