"""The log: the session's events, written append-only as JSONL and read back (store,
reader, verify, search, the derived index), the observation chunks in force and the digest
of figures kept current as it grows, and what each call in it cost at list price
(pricing). The truth everything else is derived from.

Imports nothing of scribe's other packages."""
