"""Run inside an agent-command/v1 sandbox by test/integration/agent-command.test.ts: what can a program reach?

`isolation`: its own gateway route (the models list and one chat call), the same route's port with another
episode's route path, no key, and every other address it might try (the host's model server and addresses, a
name lookup). `calls N`: N chat calls in a row, as a harness would make them. Prints one JSON object.
"""

import json
import os
import socket
import sys
import urllib.error
import urllib.request

BASE = os.environ['OPENAI_BASE_URL']
KEY = os.environ['OPENAI_API_KEY']


def http(url, key=KEY, body=None):
    headers = {'content-type': 'application/json'}
    if key is not None:
        headers['authorization'] = 'Bearer ' + key
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return {'status': response.status, 'body': json.loads(response.read())}
    except urllib.error.HTTPError as error:
        return {'status': error.code, 'body': json.loads(error.read() or b'null')}


def chat(content):
    return http(BASE + '/chat/completions', body={'model': 'any', 'max_tokens': 8, 'messages': [{'role': 'user', 'content': content}]})


def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return 'connected'
    except OSError as error:
        return type(error).__name__


def isolation():
    root = BASE[: BASE.index('/e/')]
    reached = {'models': http(BASE + '/models')['status'], 'chat': chat('Say hi.')['status']}
    reached['other_route_with_own_key'] = http(root + os.environ['OTHER_ROUTE_PATH'] + '/models')['status']
    reached['no_key'] = http(BASE + '/models', key=None)['status']
    for address in os.environ['HOST_ADDRESSES'].split(','):
        for port in map(int, os.environ['HOST_PORTS'].split(',')):
            reached['tcp %s:%d' % (address, port)] = connect(address, port)
    try:
        socket.getaddrinfo('example.com', 443)
        reached['dns'] = 'resolved'
    except OSError as error:
        reached['dns'] = type(error).__name__
    return reached


def calls(count):
    return {'statuses': [chat('Count to %d.' % n)['status'] for n in range(count)]}


if __name__ == '__main__':
    print(json.dumps(isolation() if sys.argv[1] == 'isolation' else calls(int(sys.argv[2]))))
