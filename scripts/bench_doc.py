"""What the benchmark scripts share: the machine's description, waiting for a quiet machine,
and replacing one section of docs/BENCHMARKS.md."""
import contextlib
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "docs/BENCHMARKS.md"


def load_average():
    return os.getloadavg()[0]


def wait_quiet(limit, poll_seconds=10, most_seconds=600):
    """Waits until the 1-minute load average is below `limit` (None: no wait), at most
    `most_seconds`."""
    if limit is None:
        return
    deadline = time.time() + most_seconds
    while load_average() >= limit and time.time() < deadline:
        print(f"load {load_average():.1f} >= {limit}: waiting", flush=True)
        time.sleep(poll_seconds)


def cpu_name():
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def memory_gib():
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path("/proc/meminfo").read_text().split()[1]) / 2 ** 20
    return None


def replace_section(title, text, path=BENCHMARKS):
    """Replaces the section that starts with the heading `title` (up to the next "## "
    heading) by `text`, or appends `text` when there is no such section."""
    doc = path.read_text()
    start = doc.find(title + "\n")
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        end = doc.find("\n## ", start + len(title))
        doc = doc[:start] + text.rstrip("\n") + ("\n\n" + doc[end + 1:] if end >= 0 else "")
    path.write_text(doc if doc.endswith("\n") else doc + "\n")
