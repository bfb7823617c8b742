"""Server-sent events read off an http.client response, line by line as they arrive: each
event's name (or None) and its data, parsed as JSON when it is JSON."""

import json


def events(response, on_first_byte=None):
    """Yields (event name, data) for each event; calls `on_first_byte` when the body's first
    line arrives."""
    name, data = None, []
    first = True
    while True:
        line = response.readline()
        if first and line and on_first_byte:
            on_first_byte()
        first = False
        if not line:
            break
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield name, _parsed("\n".join(data))
            name, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        yield name, _parsed("\n".join(data))


def _parsed(text):
    try:
        return json.loads(text)
    except ValueError:
        return text
