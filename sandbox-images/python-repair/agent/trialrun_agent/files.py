"""File requests (write, read, snapshot): request paths judged in one place (`checked_path`), every refusal a
Refused that says what is wrong."""

import base64
import errno
import os
import stat

from .protocol import Refused
from .system import READ_CHUNK

# Linux's limits on one name and on a whole path, in bytes.
NAME_MAX = 255
PATH_MAX = 4096
# Folders a snapshot enters below its root; each is opened from the root down, so depth costs time squared.
SNAPSHOT_MAX_DEPTH = 64


def checked_path(root, relative):
    """The real path of `relative` under the real folder `root`, or Refused('bad-path') saying what is wrong.

    The one place where request paths are judged: not a string, empty, a NUL byte, text that is not valid
    Unicode, absolute, a '..' component, a name over NAME_MAX or a path over PATH_MAX bytes, or a path that
    leads out of `root` through a symlink.
    """
    if not isinstance(relative, str):
        raise Refused('bad-path', 'path must be a string, got %s' % type(relative).__name__)
    if relative == '':
        raise Refused('bad-path', 'path must not be empty')
    if '\0' in relative:
        raise Refused('bad-path', 'path must not contain a NUL byte: %r' % relative)
    try:
        encoded = relative.encode('utf-8')
    except UnicodeEncodeError:
        raise Refused('bad-path', 'path is not valid Unicode text: %r' % relative) from None
    if relative.startswith('/'):
        raise Refused('bad-path', 'path must be relative to the workspace: %s is absolute' % relative)
    parts = encoded.split(b'/')
    if b'..' in parts:
        raise Refused('bad-path', "path must stay inside the workspace: %s resolves outside %s (it goes up with '..')" % (relative, root))
    longest = max(parts, key=len)
    if len(longest) > NAME_MAX:
        raise Refused('bad-path', 'path has a name of %d bytes, over the %d-byte limit of a file name: %s...' % (len(longest), NAME_MAX, relative[:80]))
    full = len(os.path.join(root, relative).encode('utf-8'))
    if full >= PATH_MAX:
        raise Refused('bad-path', 'path is %d bytes under %s, over the %d-byte limit of a path: %s...' % (full, root, PATH_MAX, relative[:80]))
    path = os.path.realpath(os.path.join(root, relative))
    if path != root and not path.startswith(root + os.sep):
        raise Refused('bad-path', 'path must stay inside the workspace: %s resolves outside %s through a symlink (to %s)' % (relative, root, path))
    return path


def refusal(error, relative):
    """An OSError met while serving `relative`, as the Refused the caller can act on."""
    code = error.errno
    if code in (errno.ENOENT, errno.ENOTDIR):
        return Refused('missing', 'no such file: %s' % relative)
    if code == errno.EISDIR:
        return Refused('directory', '%s is a directory, not a file' % relative)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return Refused('no-space', 'no space left in the sandbox for %s (its size or file-count limit)' % relative)
    if code == errno.EFBIG:
        return Refused('no-space', '%s would be over the sandbox\'s file size limit' % relative)
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return Refused('denied', 'permission denied: %s' % relative)
    if code == errno.EEXIST:
        return Refused('not-a-file', 'cannot create a folder on the way to %s: a file of that name is in the way' % relative)
    return Refused('io', 'cannot use %s: %s' % (relative, os.strerror(code) if code else error))


def write_files(request):
    root = os.path.realpath(request['dir'])
    files = request['files']
    if not isinstance(files, dict):
        raise ValueError('files must be an object of path -> text')
    planned = []
    # Everything is checked before anything is written, so a refused request changes nothing.
    for relative, content in files.items():
        path = checked_path(root, relative)
        if path == root:
            raise Refused('directory', '%s is the folder itself, not a file' % relative)
        if not isinstance(content, str):
            raise Refused('bad-content', 'content of %s must be text, got %s' % (relative, type(content).__name__))
        try:
            planned.append((relative, path, content.encode('utf-8')))
        except UnicodeEncodeError:
            raise Refused('not-utf8', 'content of %s is not valid Unicode text' % relative) from None
    for relative, path, data in planned:
        # Written beside and renamed into place: a write that fails (a full disk) leaves the old file as it was.
        staged = os.path.join(os.path.dirname(path), '.trialrun-write-%s' % os.urandom(6).hex())
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(staged, 'wb') as f:
                f.write(data)
            os.replace(staged, path)
        except OSError as error:
            try:
                os.unlink(staged)
            except OSError:
                pass
            raise refusal(error, relative) from None
    return {}


def read_regular(path, relative, limit, dir_fd=None):
    """The bytes of a regular file, refusing anything else (a fifo would block, a device never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as error:
        raise refusal(error, relative) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused('directory', '%s is a directory, not a file' % relative)
        if not stat.S_ISREG(info.st_mode):
            raise Refused('not-a-file', '%s is not a regular file' % relative)
        if info.st_size > limit:
            raise Refused('too-large', '%s is %d bytes, over the %d bytes one read may take' % (relative, info.st_size, limit))
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(READ_CHUNK * 16, limit + 1 - size))
            if not chunk:
                return b''.join(chunks)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew while we read it
                raise Refused('too-large', '%s is over the %d bytes one read may take' % (relative, limit))
    except OSError as error:
        raise refusal(error, relative) from None
    finally:
        os.close(fd)


def read_files(request):
    root = os.path.realpath(request['dir'])
    budget = int(request.get('maxBytes') or 16 * 1024 * 1024)
    paths = request['paths']
    if not isinstance(paths, list):
        raise ValueError('paths must be a list')
    checked = [(relative, checked_path(root, relative)) for relative in paths]
    files = {}
    for relative, path in checked:
        data = read_regular(path, relative, budget)
        budget -= len(data)
        try:
            files[relative] = data.decode('utf-8')
        except UnicodeDecodeError as error:
            raise Refused('not-utf8', '%s is not UTF-8 text (byte %d is 0x%02x)' % (relative, error.start, data[error.start])) from None
    return {'files': files}


def open_folder(root_fd, parts):
    """A descriptor to list the folder `parts` below `root_fd`, opened one name at a time without following
    symlinks: at most two descriptors are open at once, and no path string ever gets near PATH_MAX."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            child = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
        # Only the folder to list needs read permission; the way to it needs search permission alone.
        listable = os.open('.', os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    return listable


def snapshot(request):
    """Every entry below `dir`, names as raw bytes (base64), never following a symlink.

    Regular files up to `maxFileBytes` come with their text (UTF-8, undecodable bytes replaced); symlinks with
    their target; anything else, or what does not fit `maxBytes` in all, is listed in `skipped` with the reason.
    Folders named in `skipDirs` are not entered, nor folders more than SNAPSHOT_MAX_DEPTH deep.
    """
    # O_PATH: a root the agent made unreadable (chmod 000) is reported as skipped, like any other folder.
    root_fd = os.open(request['dir'], os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    max_file = int(request.get('maxFileBytes') or 1024 * 1024)
    budget = int(request.get('maxBytes') or 64 * 1024 * 1024)
    skip_dirs = {os.fsencode(name) for name in request.get('skipDirs') or []}
    b64 = lambda data: base64.b64encode(data).decode('ascii')  # noqa: E731
    files, symlinks, skipped = [], [], []
    pending = [[]]
    try:
        while pending:
            parts = pending.pop()
            try:
                fd = open_folder(root_fd, parts)
            except OSError as error:
                skipped.append({'path': b64(b'/'.join(parts)), 'reason': 'unreadable folder: %s' % os.strerror(error.errno)})
                continue
            try:
                with os.scandir(fd) as entries:
                    listed = [(os.fsencode(entry.name), entry.is_dir(follow_symlinks=False), entry.is_symlink(), entry.is_file(follow_symlinks=False)) for entry in entries]
                for name, is_dir, is_link, is_file in sorted(listed):
                    relative = b'/'.join(parts + [name])
                    budget -= len(relative)
                    if budget < 0:
                        skipped.append({'path': b64(relative), 'reason': 'over the snapshot\'s byte budget'})
                    elif is_dir:
                        if len(parts) + 1 > SNAPSHOT_MAX_DEPTH:
                            skipped.append({'path': b64(relative), 'reason': 'nested more than %d folders deep' % SNAPSHOT_MAX_DEPTH})
                        elif name not in skip_dirs:
                            pending.append(parts + [name])
                    elif is_link:
                        target = os.fsencode(os.readlink(name, dir_fd=fd))
                        budget -= len(target)
                        symlinks.append({'path': b64(relative), 'target': b64(target)})
                    elif is_file:
                        try:
                            data = read_regular(name, os.fsdecode(relative), min(max_file, max(budget, 0)), dir_fd=fd)
                        except Refused as error:
                            skipped.append({'path': b64(relative), 'reason': str(error)})
                            continue
                        budget -= len(data)
                        files.append({'path': b64(relative), 'text': data.decode('utf-8', 'replace')})
                    else:
                        skipped.append({'path': b64(relative), 'reason': 'not a regular file, folder or symlink'})
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return {'files': files, 'symlinks': symlinks, 'skipped': skipped}
