#!/usr/bin/env python3
"""Gives a fresh clone's files back the modification times their content had.

    python3 .ci/mtimes.py MANIFEST

Cargo decides what to rebuild by modification times: a crate whose sources
are newer than what was built from them is built again. Every file of a
fresh clone is new, so each CI run rebuilt every workspace crate in each of
its four builds (clippy's check, the tests' debug build, the release binary,
the fuzz targets), even the crates nothing had changed in since the last run.

MANIFEST (in CI's cache) holds, for each tracked file, its blob id and the
time that content appeared at that path. A file whose content is the one
the manifest holds gets that time back; any other file keeps its checkout
time, which the manifest then records. So an artifact built after a file's
content appeared was built from that content and is reused, and one built
before it (from other content) is not: freshness follows content, as if
every run had been in one checkout.

Sound only for build directories that nothing but these runs builds into:
a build of other content made later would pass for fresh. `.ci/run` gives
CI directories of its own.
"""

import os
import subprocess
import sys


def tracked():
    """(path, blob id) of every tracked file, from the index."""
    out = subprocess.run(
        ["git", "ls-files", "--stage", "-z"], check=True, capture_output=True
    ).stdout
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, blob, _stage = meta.split(b" ")
        if mode == b"160000":  # a submodule: no file here
            continue
        yield path.decode("utf-8", "surrogateescape"), blob.decode()


def read_manifest(path):
    known = {}
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                blob, ns, name = line.rstrip("\n").split(" ", 2)
                known[name] = (blob, int(ns))
    except FileNotFoundError:
        pass
    except ValueError:
        # A damaged manifest: every file counts as new, which is only slow.
        known = {}
    return known


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: .ci/mtimes.py MANIFEST")
    manifest = sys.argv[1]
    known = read_manifest(manifest)
    kept = new = 0
    lines = []
    for path, blob in tracked():
        try:
            st = os.lstat(path)
        except FileNotFoundError:  # deleted in the work tree
            continue
        old = known.get(path)
        if old is not None and old[0] == blob:
            ns = old[1]
            os.utime(path, ns=(ns, ns), follow_symlinks=False)
            kept += 1
        else:
            ns = st.st_mtime_ns
            new += 1
        lines.append(f"{blob} {ns} {path}\n")
    os.makedirs(os.path.dirname(os.path.abspath(manifest)), exist_ok=True)
    tmp = manifest + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(lines)
    os.replace(tmp, manifest)
    print(f".ci/mtimes.py: {kept} files as in the last run, {new} new or changed")


main()
