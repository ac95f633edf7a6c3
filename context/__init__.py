"""The context: the request rendered from the log (render), what it weighs (token estimates, budgets), the figures of what was sent, and the reopen
checkpoint that lets render start without reading the whole log.

May import: scribe.log."""
