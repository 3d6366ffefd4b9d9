"""A TCP proxy between a test's HCI host and a Bumble virtual controller, which the test can cut and restore.

Usage: tcp_proxy.py TARGET_PORT. Listens on 127.0.0.1 (a free port, printed as `READY <port>`) and bridges each
accepted connection to 127.0.0.1:TARGET_PORT. SIGUSR1 cuts: every bridged connection is closed and the port stops
listening (connections are refused), then `CUT <n>` is printed. SIGUSR2 restores: the same port listens again,
then `RESTORED <n>` is printed. Standard library only.
"""
import asyncio
import signal
import sys


async def main(target_port):
    loop = asyncio.get_running_loop()
    connections = set()
    state = {"server": None, "port": 0, "cuts": 0, "restores": 0}

    async def pipe(reader, writer, pair):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for side in pair:
                side.close()

    async def bridge(reader, writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            writer.close()
            return
        pair = (writer, upstream_writer)
        connections.add(pair)
        try:
            await asyncio.gather(pipe(reader, upstream_writer, pair), pipe(upstream_reader, writer, pair))
        finally:
            connections.discard(pair)

    async def listen(port):
        state["server"] = await asyncio.start_server(bridge, "127.0.0.1", port, reuse_address=True)
        state["port"] = state["server"].sockets[0].getsockname()[1]

    async def cut():
        server = state["server"]
        state["server"] = None
        if server is not None:
            server.close()
        for pair in list(connections):
            for side in pair:
                side.close()
        state["cuts"] += 1
        print(f"CUT {state['cuts']}", flush=True)

    async def restore():
        if state["server"] is None:
            await listen(state["port"])
        state["restores"] += 1
        print(f"RESTORED {state['restores']}", flush=True)

    await listen(0)
    loop.add_signal_handler(signal.SIGUSR1, lambda: asyncio.ensure_future(cut()))
    loop.add_signal_handler(signal.SIGUSR2, lambda: asyncio.ensure_future(restore()))
    print(f"READY {state['port']}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
