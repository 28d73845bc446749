# Known-bad variants of a task's module, for calibration (`verify calibrate`) and the verifier's
# integration tests. Appended to the module after one line that names the variant
# (`_TRIALRUN_VARIANT = "<name>"`); every public function of the module is then wrapped to misbehave in
# that one way whenever a test calls it. Each is a known way to game a verifier or to take it down; each
# must score 0, flagged, and never crash the verifier.
import os as _trialrun_os
import signal as _trialrun_signal
import time as _trialrun_time

_TRIALRUN_VARIANT = globals().get("_TRIALRUN_VARIANT", "")


class _TrialrunAnything:
    """Equal to everything, unequal to nothing, always true: decides any comparison it is part of."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    def __len__(self):
        return 1

    def __contains__(self, item):
        return True

    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = object.__hash__


class _TrialrunPassThrough:
    """Strict checks that check nothing, for a test module's globals to shadow the real ones with."""

    plain = staticmethod(lambda value: value)
    is_instance = staticmethod(isinstance)
    all_ = staticmethod(all)
    any_ = staticmethod(any)


def _trialrun_shadow_strict_checks():
    import builtins
    import sys

    for name in dir(builtins):
        if name.startswith("__trialrun_strict_"):
            for module in list(sys.modules.values()):
                if str(getattr(module, "__file__", "")).endswith(".py") and "test" in str(getattr(module, "__name__", "")):
                    setattr(module, name, _TrialrunPassThrough)


def _trialrun_misbehave(function, args, kwargs):
    variant = _TRIALRUN_VARIANT
    if variant == "always-equal":
        return _TrialrunAnything()
    if variant == "shadows-strict-checks":
        _trialrun_shadow_strict_checks()
        return _TrialrunAnything()
    if variant == "kills-runner":
        _trialrun_os.kill(_trialrun_os.getppid(), _trialrun_signal.SIGKILL)
    elif variant == "kills-everything":
        _trialrun_os.kill(-1, _trialrun_signal.SIGKILL)
    elif variant == "stops-runner":
        _trialrun_os.kill(_trialrun_os.getppid(), _trialrun_signal.SIGSTOP)
    elif variant == "kills-own-group":
        _trialrun_os.killpg(0, _trialrun_signal.SIGKILL)
    elif variant == "exits-in-test":
        _trialrun_os._exit(1)
    elif variant == "interrupts":
        raise KeyboardInterrupt
    elif variant == "hangs":
        _trialrun_time.sleep(3600)
    elif variant == "forks-forever":
        while True:
            try:
                _trialrun_os.fork()
            except OSError:
                pass
    elif variant == "floods-channels":
        for fd in range(3, 64):
            try:
                _trialrun_os.write(fd, b'{"event": "logreport"}\n' * 30000)
            except OSError:
                pass
    return function(*args, **kwargs)


def _trialrun_wrapped(function):
    def wrapper(*args, **kwargs):
        return _trialrun_misbehave(function, args, kwargs)

    wrapper.__name__ = function.__name__
    return wrapper


for _trialrun_name, _trialrun_value in list(globals().items()):
    if not _trialrun_name.startswith("_") and callable(_trialrun_value) and not isinstance(_trialrun_value, type) and getattr(_trialrun_value, "__module__", None) == __name__:
        globals()[_trialrun_name] = _trialrun_wrapped(_trialrun_value)
