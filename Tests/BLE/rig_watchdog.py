"""Shared by the Bumble rig scripts: a process started by a test ends when that test process goes away."""
import asyncio
import os

_WATCHDOGS = []


async def _exit_when_orphaned(parent):
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    os._exit(0)


def exit_with_parent():
    """On the running event loop, ends this process once the test process that started it is gone (even killed)."""
    _WATCHDOGS.append(asyncio.get_running_loop().create_task(_exit_when_orphaned(os.getppid())))
