"""A WebSocket server none of throng's authors wrote: Python's websockets (Debian's
python3-websockets), echoing. A message `close` is answered by a close with code 4001; it
pings every 50 ms and closes (1011) a connection whose pong is 200 ms late. Prints its port,
then serves for at most argv[1] seconds."""
import asyncio
import sys

import websockets


async def handler(ws, path=None):
    async for m in ws:
        if m == "close":
            await ws.close(code=4001, reason="asked")
            return
        await ws.send(m)


async def main():
    async with websockets.serve(
        handler, "127.0.0.1", 0, ping_interval=0.05, ping_timeout=0.2, max_size=1 << 20
    ) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.sleep(float(sys.argv[1]))


asyncio.run(main())
