"""What a session leaves to do as it ends, done after it.

A headless run never compresses or curates on its way to the answer unless its request would not
fit the window without a compression. What it leaves (its memory's compression, past the
threshold; the notes' curation, when it taught something) is handed over as it ends
(handover.py) to a short-lived process of its own (finisher.py) that takes the session's one
writer, does the work and exits; `housekeeping = "inline"` does it in scribe before it exits
instead. The person's next run never waits for it: a run that continues the session stops a
finisher still at it, and what is left is done again after that run. Nothing is lost: each
log says what of it has been compressed and curated.
"""
