"""Drives one episode's gateway route with the official `openai` client, as an agent harness would.

Run by test/integration/gateway.test.ts in a cached virtualenv that holds `openai`. Arguments: the route's base URL,
its key, another episode's key. Makes, in order: a plain call; a streamed call re-sending the history as received; a
third such call; a call whose history rewrites the first reply (drift); one call beyond the episode's budget;
and refused calls (another episode's key, a bad field). Prints one JSON object with everything the client received.
"""
import json
import sys

import openai

MAX_TOKENS = 24


def reply_of(message) -> dict:
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in (message.tool_calls or [])]
    return {"content": message.content, "tool_calls": calls}


def history_message(reply: dict) -> dict:
    if reply["tool_calls"]:
        return {
            "role": "assistant",
            "content": reply["content"],
            "tool_calls": [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in reply["tool_calls"]],
        }
    return {"role": "assistant", "content": reply["content"]}


def refusal(call) -> dict:
    try:
        call()
    except openai.APIStatusError as error:
        body = error.body if isinstance(error.body, dict) else {}
        return {"status": error.status_code, "code": body.get("code"), "param": body.get("param"), "message": body.get("message")}
    return {"status": 200}


def main(base_url: str, api_key: str, other_key: str) -> None:
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=2)
    turns = []
    model = client.models.list().data[0].id

    # Offered on every call, as harnesses do: the tool list is part of the rendered prompt, so it must not change.
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]
    first = client.chat.completions.create(model=model, messages=messages, max_tokens=MAX_TOKENS, temperature=0.8, seed=11, tools=tools)
    turns.append({"stream": False, "finish_reason": first.choices[0].finish_reason, **reply_of(first.choices[0].message)})
    messages += [history_message(turns[-1]), {"role": "user", "content": "Another one?"}]

    text, finish, chunks = "", None, 0
    for chunk in client.chat.completions.create(model=model, messages=messages, max_tokens=MAX_TOKENS, temperature=0.8, seed=12, tools=tools, stream=True, stream_options={"include_usage": True}):
        chunks += 1
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    turns.append({"stream": True, "finish_reason": finish, "content": text, "tool_calls": [], "chunks": chunks})
    messages += [history_message(turns[-1]), {"role": "user", "content": "List the files here."}]

    third = client.chat.completions.create(model=model, messages=messages, max_tokens=MAX_TOKENS, temperature=0.8, seed=13, tools=tools)
    turns.append({"stream": False, "finish_reason": third.choices[0].finish_reason, **reply_of(third.choices[0].message)})

    # A harness that rewrites an earlier reply (as some trim or summarise history): the gateway must say it drifted.
    edited = [dict(m) for m in messages[:-1]] + [{"role": "user", "content": "Once more."}]
    edited[2] = {"role": "assistant", "content": (turns[0]["content"] or "") + " (edited)"}
    fourth = client.chat.completions.create(model=model, messages=edited, max_tokens=MAX_TOKENS, temperature=0.8, seed=14, tools=tools)
    turns.append({"stream": False, "finish_reason": fourth.choices[0].finish_reason, **reply_of(fourth.choices[0].message)})

    refusals = {
        "over_budget": refusal(lambda: client.chat.completions.create(model=model, messages=messages, max_tokens=MAX_TOKENS, tools=tools)),
        "other_key": refusal(lambda: openai.OpenAI(base_url=base_url, api_key=other_key, max_retries=0).chat.completions.create(model=model, messages=messages)),
        "bad_field": refusal(lambda: client.chat.completions.create(model=model, messages=messages, temperature=7)),
    }
    print(json.dumps({"model": model, "turns": turns, "refusals": refusals}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
