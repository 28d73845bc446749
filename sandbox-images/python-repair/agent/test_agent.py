"""The agent's file requests (one judge of request paths, refusals with a reason, snapshots of any names) and warm execs."""

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys

import pytest

import agent
from trialrun_agent import files as file_requests, protocol, system, zygote


@pytest.fixture
def root(tmp_path):
    return os.path.realpath(tmp_path)


def refused(call, *args):
    with pytest.raises(protocol.Refused) as caught:
        call(*args)
    return caught.value.reason, str(caught.value)


@pytest.mark.parametrize(
    'path, says',
    [
        ('/etc/x', 'path must be relative to the workspace: /etc/x is absolute'),
        ('../x', "resolves outside"),
        ('a/../../x', "it goes up with '..'"),
        ('a/..', "it goes up with '..'"),
        ('a\0b', 'must not contain a NUL byte'),
        ('', 'must not be empty'),
        ('x' * 256, 'name of 256 bytes, over the 255-byte limit'),
        ('é' * 128, 'name of 256 bytes, over the 255-byte limit'),
        ('/'.join(['d' * 200] * 21), 'over the 4096-byte limit of a path'),
        ('\ud800.py', 'not valid Unicode text'),
    ],
)
def test_bad_paths_are_refused_with_a_reason(root, path, says):
    reason, message = refused(file_requests.checked_path, root, path)
    assert reason == 'bad-path'
    assert says in message


def test_a_path_that_is_not_a_string_is_refused(root):
    assert refused(file_requests.checked_path, root, 7) == ('bad-path', 'path must be a string, got int')


def test_a_symlink_out_of_the_folder_is_refused_and_one_inside_is_followed(root):
    os.symlink('/etc', os.path.join(root, 'out'))
    os.mkdir(os.path.join(root, 'pkg'))
    os.symlink('pkg', os.path.join(root, 'in'))
    reason, message = refused(file_requests.checked_path, root, 'out/passwd')
    assert reason == 'bad-path' and 'through a symlink (to /etc/passwd)' in message
    assert file_requests.checked_path(root, 'in/mod.py') == os.path.join(root, 'pkg', 'mod.py')


def test_names_with_any_text_are_fine(root):
    for name in ('-rf', 'new\nline.py', ' spaced ', 'x' * 255, 'a/./b', '__proto__'):
        assert file_requests.checked_path(root, name).startswith(root + os.sep)


def test_reads_say_why_they_fail(root):
    os.mkdir(os.path.join(root, 'dir'))
    with open(os.path.join(root, 'bin'), 'wb') as f:
        f.write(b'ok\xff')
    with open(os.path.join(root, 'big'), 'wb') as f:
        f.write(b'x' * 100)
    os.mkfifo(os.path.join(root, 'fifo'))
    read = lambda path, limit=1000: file_requests.read_files({'dir': root, 'paths': [path], 'maxBytes': limit})  # noqa: E731
    assert refused(read, 'nope.py') == ('missing', 'no such file: nope.py')
    assert refused(read, 'big/x') == ('missing', 'no such file: big/x')
    assert refused(read, 'dir') == ('directory', 'dir is a directory, not a file')
    assert refused(read, 'fifo') == ('not-a-file', 'fifo is not a regular file')
    assert refused(read, 'big', 10)[0] == 'too-large'
    assert refused(read, 'bin') == ('not-utf8', 'bin is not UTF-8 text (byte 2 is 0xff)')


def test_a_refused_write_writes_nothing(root):
    files = {'good.py': 'x = 1\n', '/etc/bad': 'y'}
    reason, _ = refused(file_requests.write_files, {'dir': root, 'files': files})
    assert reason == 'bad-path'
    assert not os.path.exists(os.path.join(root, 'good.py'))
    assert refused(file_requests.write_files, {'dir': root, 'files': {'a.py': '\udc80'}})[0] == 'not-utf8'
    assert refused(file_requests.write_files, {'dir': root, 'files': {'a.py': 3}})[0] == 'bad-content'


def test_write_failures_say_why(root):
    file_requests.write_files({'dir': root, 'files': {'file': 'x'}})
    assert refused(file_requests.write_files, {'dir': root, 'files': {'file/inner.py': 'x'}})[0] == 'not-a-file'
    os.mkdir(os.path.join(root, 'dir'))
    assert refused(file_requests.write_files, {'dir': root, 'files': {'dir': 'x'}})[0] == 'directory'
    assert refused(file_requests.write_files, {'dir': root, 'files': {'.': 'x'}}) == ('directory', '. is the folder itself, not a file')


def test_snapshot_carries_every_name_as_bytes_and_symlinks_unfollowed(root):
    raw = os.fsencode(root)
    names = [b'plain.py', b'new\nline.py', b'-rf', b'bad\xff\xfe.py', b'x' * 255, b'deep/' * 40 + b'leaf.py']
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(raw, name)), exist_ok=True)
        with open(os.path.join(raw, name), 'wb') as f:
            f.write(b'text of ' + name.replace(b'\xff', b'').replace(b'\xfe', b''))
    os.symlink(b'/etc/passwd', os.path.join(raw, b'link'))
    os.symlink(b'target\xff', os.path.join(raw, b'odd-link'))
    os.mkdir(os.path.join(raw, b'__pycache__'))
    with open(os.path.join(raw, b'__pycache__', b'm.pyc'), 'wb') as f:
        f.write(b'\0')
    os.mkfifo(os.path.join(raw, b'fifo'))
    with open(os.path.join(raw, b'big'), 'wb') as f:
        f.write(b'x' * 2000)

    result = file_requests.snapshot({'dir': root, 'maxFileBytes': 1000, 'skipDirs': ['__pycache__']})
    decode = lambda entries: {base64.b64decode(e['path']): e for e in entries}  # noqa: E731
    files, links, skipped = decode(result['files']), decode(result['symlinks']), decode(result['skipped'])
    assert sorted(files) == sorted(names)
    assert files[b'new\nline.py']['text'] == 'text of new\nline.py'
    assert {name: base64.b64decode(e['target']) for name, e in links.items()} == {b'link': b'/etc/passwd', b'odd-link': b'target\xff'}
    assert sorted(skipped) == [b'big', b'fifo']
    assert 'over the 1000 bytes' in skipped[b'big']['reason']


def test_snapshot_stops_carrying_at_its_byte_budget(root):
    for n in range(10):
        with open(os.path.join(root, 'f%d' % n), 'w') as f:
            f.write('y' * 100)
    result = file_requests.snapshot({'dir': root, 'maxFileBytes': 1000, 'maxBytes': 350})
    assert len(result['files']) < 10
    assert len(result['files']) + len(result['skipped']) == 10


def test_a_failed_write_leaves_the_old_file_and_no_scraps(root, monkeypatch):
    file_requests.write_files({'dir': root, 'files': {'keep.py': 'old\n'}})

    def full(*_):
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(os, 'replace', full)
    assert refused(file_requests.write_files, {'dir': root, 'files': {'keep.py': 'new\n'}})[0] == 'no-space'
    assert os.listdir(root) == ['keep.py']
    with open(os.path.join(root, 'keep.py')) as f:
        assert f.read() == 'old\n'


def test_snapshot_reports_folders_too_deep_as_skipped(root):
    deep = os.path.join(root, *(['d'] * (file_requests.SNAPSHOT_MAX_DEPTH + 3)))
    os.makedirs(deep)
    with open(os.path.join(deep, 'leaf.py'), 'w') as f:
        f.write('x')
    result = file_requests.snapshot({'dir': root})
    reasons = {base64.b64decode(e['path']): e['reason'] for e in result['skipped']}
    assert reasons == {b'/'.join([b'd'] * (file_requests.SNAPSHOT_MAX_DEPTH + 1)): 'nested more than 64 folders deep'}
    assert result['files'] == []


@pytest.mark.parametrize(
    'argv, expected',
    [
        ([sys.executable, '-m', 'pytest', '-q'], ('-m', 'pytest', ['-q'])),
        ([sys.executable, 'tool.py', 'list', 'x'], ('script', 'tool.py', ['list', 'x'])),
        ([sys.executable, '-c', 'print(1)'], None),
        ([sys.executable, '-I', '-m', 'pytest'], None),
        ([sys.executable, '-m'], None),
        ([sys.executable], None),
        (['sh', '-c', 'true'], None),
        (['no-such-program', '-m', 'pytest'], None),
    ],
)
def test_only_plain_python_module_and_script_commands_run_warm(argv, expected):
    found = zygote.python_command(argv, dict(os.environ))
    assert (found and found[1:]) == expected
    if found:
        assert found[0] == os.path.realpath(sys.executable)


def exec_all(requests):
    """Runs the agent as the executor does and returns its answers to `requests`, in order; a callable in
    `requests` is called with the agent's pid instead."""
    process = subprocess.Popen([sys.executable, '-I', '-S', agent.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert json.loads(process.stdout.readline())['event'] == 'ready'
    answers = []
    for number, request in enumerate(requests):
        if callable(request):
            request(process.pid)
            continue
        process.stdin.write((json.dumps({'op': 'exec', 'id': number, **request}) + '\n').encode())
        process.stdin.flush()
        answers.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    return answers


def stop_zygotes(agent_pid):
    for pid in system.live_children().get(agent_pid, []):
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            if b'--zygote' in f.read().split(b'\0'):
                os.kill(pid, signal.SIGSTOP)


def test_a_warm_exec_answers_as_a_cold_one(root):
    with open(os.path.join(root, 'test_m.py'), 'w') as f:
        f.write('import os\n\ndef test_env():\n    assert os.environ["GREETING"] == "hi"\n\ndef test_no():\n    assert 1 == 2\n')
    with open(os.path.join(root, 'show.py'), 'w') as f:
        f.write('import os, sys\nprint(sys.argv, sys.path[0] == os.getcwd(), __name__)\nprint("to stderr", file=sys.stderr)\nraise SystemExit("bye")\n')
    pytest_run = {'argv': [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'test_m.py'], 'env': {'GREETING': 'hi'}, 'cwd': root}
    script_run = {'argv': [sys.executable, 'show.py', 'a b'], 'cwd': root}
    warm = {'preload': ['pytest', 'no_such_module_anywhere']}
    answers = exec_all([pytest_run, {**pytest_run, **warm}, {**pytest_run, **warm}, script_run, {**script_run, **warm}])
    results = [answer['result'] for answer in answers]
    for result in results:
        result['durationMs'] = 0
        result['stdout'] = re.sub(r' in [0-9.]+s', ' in Ns', result['stdout'])
    assert results[0]['exitCode'] == 1 and '1 failed, 1 passed' in results[0]['stdout']
    assert results[1] == results[0] and results[2] == results[0]
    assert results[3] == {'status': 'exited', 'exitCode': 1, 'stdout': "['show.py', 'a b'] True __main__\n", 'stderr': 'to stderr\nbye\n', 'truncated': False, 'durationMs': 0}
    assert results[4] == results[3]


def test_a_bad_preload_is_an_error_naming_it():
    (answer,) = exec_all([{'argv': ['true'], 'preload': 'pytest'}])
    assert answer == {'id': 0, 'ok': False, 'error': 'ValueError: preload must be a list of module names'}


def test_a_warm_exec_whose_zygote_was_stopped_times_out_and_the_next_one_runs(root):
    run = {'argv': [sys.executable, '-m', 'json.tool', '--help'], 'cwd': root, 'preload': ['json.tool'], 'timeoutMs': 2000}
    first, stuck, after = [answer['result'] for answer in exec_all([run, stop_zygotes, run, run])]
    assert first['exitCode'] == 0 and 'usage' in first['stdout']
    assert stuck['status'] == 'timeout'
    assert {**after, 'durationMs': 0} == {**first, 'durationMs': 0}


def test_a_loopback_connection_is_carried_both_ways_over_the_channel():
    """listen, then a client in the 'sandbox' connects: its bytes come out as conn-data events, conn-send bytes
    reach it, and each side's end is told to the other."""
    process = subprocess.Popen([sys.executable, '-I', '-S', agent.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def request(message):
        process.stdin.write((json.dumps(message) + '\n').encode())
        process.stdin.flush()

    def message():
        return json.loads(process.stdout.readline())

    assert message()['event'] == 'ready'
    request({'id': 1, 'op': 'listen'})
    listened = message()
    assert listened['ok'] and listened['result']['port'] > 0
    client = socket.create_connection(('127.0.0.1', listened['result']['port']), timeout=10)
    opened = message()
    assert opened == {'event': 'conn-open', 'listener': listened['result']['listener'], 'conn': opened['conn']}
    conn = opened['conn']
    client.sendall(b'GET / HTTP/1.1\r\n\r\n')
    received = b''
    while received != b'GET / HTTP/1.1\r\n\r\n':
        data = message()
        assert data['event'] == 'conn-data' and data['conn'] == conn
        received += base64.b64decode(data['data'])
    request({'id': 2, 'op': 'conn-send', 'conn': conn, 'data': base64.b64encode(b'HTTP/1.1 200 OK\r\n\r\n').decode()})
    assert message() == {'id': 2, 'ok': True, 'result': {'open': True}}
    assert client.recv(100) == b'HTTP/1.1 200 OK\r\n\r\n'
    client.shutdown(socket.SHUT_WR)
    assert message() == {'event': 'conn-end', 'conn': conn}
    request({'id': 3, 'op': 'conn-close', 'conn': conn})
    assert message() == {'id': 3, 'ok': True, 'result': {'open': True}}
    assert client.recv(100) == b''
    request({'id': 4, 'op': 'conn-send', 'conn': conn, 'data': ''})
    assert message() == {'id': 4, 'ok': True, 'result': {'open': False}}
    client.close()
    process.stdin.close()
    assert process.wait(timeout=30) == 0
