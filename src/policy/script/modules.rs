//! The Python modules the policy takes to be the standard library or well-known installed
//! packages. A block that imports any other module (or imports relatively: `from . import
//! x`) may run a file of the workspace — one an earlier block wrote — whose code the
//! policy cannot see: it is "cannot tell".

/// The standard library's top-level modules (`sys.stdlib_module_names` of Python 3.11,
/// with a few of older versions).
const STANDARD: &str = "
ConfigParser Queue StringIO __future__ __main__ abc aifc antigravity argparse array ast
asynchat asyncio asyncore atexit audioop base64 bdb binascii bisect builtins bz2 cPickle
cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys
commands compileall concurrent configparser contextlib contextvars copy copyreg crypt
csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils doctest email
encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions
ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib
heapq hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools
json keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal math
mimetypes mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath
nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle
pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint profile pstats
pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline
reprlib resource rlcompleter runpy sched secrets select selectors shelve shlex shutil
signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile
sre_constants sre_parse ssl stat statistics string stringprep struct subprocess sunau
symtable sys sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap this
threading time timeit tkinter token tokenize tomllib trace traceback tracemalloc tty
turtle turtledemo types typing unicodedata unittest urllib urllib2 urlparse uu uuid venv
warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp
zipfile zipimport zlib zoneinfo
";

/// Well-known packages, by the name they are imported as.
const PACKAGES: &str = "
Bio IPython PIL PyPDF2 accelerate aiohttp altair anthropic astropy attr attrs biopython
bokeh boto3 botocore brotli bs4 certifi chardet charset_normalizer click cloudpickle
colorama cryptography cv2 dash dask datasets dateutil dill django docker docx duckdb
einops emoji fabric faker fastapi fitz flask flax folium gensim geopandas gi google
gradio grpc h5py httpx huggingface_hub hypothesis idna imageio invoke ipywidgets jax
jinja2 joblib jwt keras kubernetes librosa lightgbm lightning lxml lz4 markdown
matplotlib mock msgpack netCDF4 networkx nltk numba numpy onnx onnxruntime openai
openpyxl optax orjson pandas paramiko pexpect pip pkg_resources plotly plumbum polars
pptx psutil psycopg2 pyarrow pydantic pydub pygame pymongo pypdf pyspark pytest
pytorch_lightning pytz redis regex requests rich safetensors scipy scrapy seaborn
selenium sentencepiece serial setuptools sh shapely simplejson six skimage sklearn
soundfile spacy sqlalchemy sqlite_utils starlette statsmodels streamlit sympy tabulate
tensorboard tensorflow termcolor tiktoken tokenizers toml tomli torch torchaudio
torchvision tqdm transformers typing_extensions ujson urllib3 usb uvicorn websocket
websockets wheel wx xarray xgboost xlrd xlsxwriter yaml zstandard
";

/// Whether `module` (a top-level name: `os` of `os.path`) is a module the policy knows.
pub(super) fn is_known(module: &str) -> bool {
    static KNOWN: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    KNOWN
        .get_or_init(|| {
            STANDARD
                .split_ascii_whitespace()
                .chain(PACKAGES.split_ascii_whitespace())
                .collect()
        })
        .contains(module)
}

#[cfg(test)]
mod tests {
    use super::is_known;

    #[test]
    fn standard_and_known_packages_only() {
        for m in [
            "os",
            "sys",
            "json",
            "subprocess",
            "__future__",
            "numpy",
            "pandas",
        ] {
            assert!(is_known(m), "{m}");
        }
        for m in ["helper", "mymod", "", "os.path", "nump"] {
            assert!(!is_known(m), "{m}");
        }
    }
}
