"""A plain aiohttp client reading OpenAI-compatible streams as vLLM's benchmark client reads
them (iter_any, events split on a blank line, json.loads of each chunk, a timestamp per
chunk), for CPU per event side by side with throng-llm's reader.

    /usr/bin/python3 crates/llm/examples/aiohttp_client.py URL STREAMS SPREAD_S

Sends STREAMS chat requests to URL (e.g. http://127.0.0.1:8000), spread evenly over SPREAD_S
seconds, each on its own connection, and prints the events read and the process's CPU time
per event.
"""

import asyncio
import json
import sys
import time

import aiohttp


async def one(session, url, at, body):
    await asyncio.sleep(max(0.0, at - time.perf_counter()))
    start = time.perf_counter()
    events = 0
    first = None
    buffer = ""
    async with session.post(url + "/v1/chat/completions", json=body) as response:
        async for data in response.content.iter_any():
            buffer += data.decode()
            while "\n\n" in buffer:
                message, buffer = buffer.split("\n\n", 1)
                message = message.strip()
                if not message or message.startswith(":"):
                    continue
                chunk = message.removeprefix("data: ")
                if chunk == "[DONE]":
                    continue
                now = time.perf_counter()
                parsed = json.loads(chunk)
                choices = parsed.get("choices")
                if choices and choices[0]["delta"].get("content"):
                    events += 1
                    if first is None:
                        first = now - start
    return events, first


async def main():
    url, streams, spread = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi " * 100}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        t0 = time.perf_counter() + 1.0
        cpu = time.process_time()
        results = await asyncio.gather(
            *(one(session, url, t0 + spread * i / streams, body) for i in range(streams))
        )
        cpu = time.process_time() - cpu
    events = sum(r[0] for r in results)
    firsts = sorted(r[1] for r in results if r[1] is not None)
    print(
        f"aiohttp client: {len(firsts)}/{streams} streams, {events} content events, "
        f"{cpu * 1e6 / max(events, 1):.1f} µs CPU per event, "
        f"TTFT p50 {firsts[len(firsts) // 2] * 1e3:.2f} ms"
    )


asyncio.run(main())
