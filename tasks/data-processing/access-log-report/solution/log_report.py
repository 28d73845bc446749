"""Parses an access log in the Common Log Format into a JSON report."""

import json
import os
import re
import sys
from collections import Counter

# host ident user [time] "METHOD target PROTOCOL" status size, where size is "-" when no body was sent.
LINE = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] "(\S+) (\S+) ([^"]+)" (\d{3}) (\d+|-)$')


def report(lines):
    requests = malformed = sent = 0
    statuses = Counter()
    paths = Counter()
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        match = LINE.match(line)
        if match is None:
            malformed += 1
            continue
        requests += 1
        statuses[match.group(8)] += 1
        paths[match.group(6).split("?", 1)[0]] += 1
        sent += 0 if match.group(9) == "-" else int(match.group(9))
    top = sorted(paths.items(), key=lambda item: (-item[1], item[0]))[:3]
    return {
        "requests": requests,
        "malformed": malformed,
        "bytes": sent,
        "by_status": dict(sorted(statuses.items())),
        "top_paths": [{"path": path, "hits": hits} for path, hits in top],
    }


def main(source, target):
    with open(source) as handle:
        document = report(handle)
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target, "w") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
