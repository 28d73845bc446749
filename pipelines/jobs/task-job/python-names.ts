/**
 * Names a code-clone detector keeps when it renames identifiers. Renaming them would make unrelated code look
 * alike, and a copy with renamed variables cannot change them.
 */

/** Python 3.11's keywords and soft keywords (`keyword.kwlist`, `keyword.softkwlist`) and the public names of `builtins`. */
const GLOBALS = `
  False None True and as assert async await break class continue def del elif else except finally for from
  global if import in is lambda nonlocal not or pass raise return try while with yield _ case match
  ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError
  BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError
  ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning
  EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError
  FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError IndexError InterruptedError
  IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None
  NotADirectoryError NotImplemented NotImplementedError OSError OverflowError PendingDeprecationWarning
  PermissionError ProcessLookupError RecursionError ReferenceError ResourceWarning RuntimeError RuntimeWarning
  StopAsyncIteration StopIteration SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True
  TypeError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError
  UnicodeWarning UserWarning ValueError Warning ZeroDivisionError abs aiter all anext any ascii bin bool
  breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr dict dir
  divmod enumerate eval exec exit filter float format frozenset getattr globals hasattr hash help hex id input
  int isinstance issubclass iter len license list locals map max memoryview min next object oct open ord pow
  print property quit range repr reversed round set setattr slice sorted staticmethod str sum super tuple type
  vars zip
`;

/**
 * The public methods of the built-in types (str, bytes, int, float, complex, list, tuple, dict, set,
 * frozenset), kept only as attributes (`xs.append`): as plain names (`values`, `count`) they are variables.
 */
const METHODS = `
  add append as_integer_ratio bit_count bit_length capitalize casefold center clear conjugate copy count
  decode denominator difference difference_update discard encode endswith expandtabs extend find format_map
  from_bytes fromhex fromkeys get imag index insert intersection intersection_update is_integer isalnum
  isalpha isascii isdecimal isdigit isdisjoint isidentifier islower isnumeric isprintable isspace issubset
  issuperset istitle isupper items join keys ljust lower lstrip maketrans numerator partition pop popitem real
  remove removeprefix removesuffix replace reverse rfind rindex rjust rpartition rsplit rstrip setdefault sort
  split splitlines startswith strip swapcase symmetric_difference symmetric_difference_update title to_bytes
  translate union update upper values zfill
`;

const words = (text: string): ReadonlySet<string> => new Set(text.split(/\s+/).filter(Boolean));
export const KEPT_NAMES = words(GLOBALS);
export const KEPT_ATTRIBUTES = words(METHODS);
