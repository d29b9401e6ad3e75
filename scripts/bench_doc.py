"""What the benchmark scripts share: the machine's description, waiting for a quiet machine,
and replacing one section (or one machine's subsection) of docs/BENCHMARKS.md."""
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


def cpu_features():
    """The vector and matrix extensions that decide LibTorch's CPU speed, as one phrase."""
    flags = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    named = [name for flag, name in (("avx512f", "AVX-512"), ("avx512_bf16", "AVX-512 BF16"),
                                     ("amx_tile", "AMX")) if flag in flags]
    return ", ".join(named) if named else ("AVX2 only" if "avx2" in flags else "no AVX2")


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


def replace_subsection(title, heading, text, path=BENCHMARKS):
    """Replaces, inside the section `title`, the subsection whose "### " heading is `heading`
    (up to the next "### " or "## " heading) by `text`, or adds `text` at the end of the
    section; a missing section is appended with `text` as its only subsection. Lets one
    machine's table be rewritten without touching another machine's."""
    doc = path.read_text()
    start = doc.find(title + "\n")
    if start < 0:
        replace_section(title, title + "\n\n" + text, path)
        return
    end = doc.find("\n## ", start + len(title))
    end = len(doc) if end < 0 else end + 1
    section = doc[start:end]
    sub = section.find(heading + "\n")
    if sub < 0:
        section = section.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n\n"
    else:
        stop = len(section)
        for marker in ("\n### ", "\n## "):
            found = section.find(marker, sub + len(heading))
            if found >= 0:
                stop = min(stop, found + 1)
        rest = section[stop:]
        section = section[:sub] + text.rstrip("\n") + "\n\n" + rest
    doc = doc[:start] + section.rstrip("\n") + ("\n\n" + doc[end:] if end < len(doc) else "")
    path.write_text(doc if doc.endswith("\n") else doc + "\n")
