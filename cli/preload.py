"""The SDK loaded before the first call needs it, by a front end that owns its process.

Importing the SDK is most of a cold start. `scribe run` starts that import in a thread as the run
begins, so it goes on while the session is prepared (config, git, the sandbox's probe: much of it
waiting on other processes); the REPL starts it once its prompt is drawn, while the person types.

The import leaves a couple of hundred thousand objects that live as long as the process (the SDK's
pydantic types, mostly). Python's garbage collector would go through them again and again while
they are made, and at every full collection after, finding nothing to free: a fifth of a `scribe
run hello`'s time. So it is paused for the import, and what the process holds once the import is
done, scribe's own modules included, is frozen out of later collections (`gc.freeze`): it is still
freed when nothing refers to it, only never scanned for cycles. This is a decision for the program
that owns the process, so it is made here, in the CLI: the Python API leaves a host program's
collector alone and imports the SDK at its first call (model/client.py)."""

from __future__ import annotations

import gc
import threading

from scribe.model.client import import_sdk


def preload_sdk() -> None:
    """Import the SDK in a background thread. Not a daemon: an exit waits for the import to
    finish rather than tearing down an interpreter mid-import."""
    threading.Thread(target=load_sdk, name="scribe-sdk-import").start()


def load_sdk() -> None:
    """Import the SDK with the collector paused, then freeze what start-up made. A collector
    someone had turned off stays off, and nothing is frozen for it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        import_sdk()
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
