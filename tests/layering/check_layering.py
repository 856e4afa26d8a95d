#!/usr/bin/env python3
"""The dependency rules of the source tree, checked on its #include lines.

  1. Nothing outside the core reaches libtorch: no file under common/,
     client/ or server/service/, nor server/main.cc, includes <torch/...>,
     <ATen/...> or <c10/...>, directly or through the project's own headers.
     The core's tensor face (server/core/model/engine.h and what it
     includes) is thereby the core's alone.
  2. One direction: common/ includes nothing of server/ or client/; client/
     includes nothing of server/; server/core/ includes nothing of
     server/service/ or client/.
  3. The core's public headers the service uses are torch-free:
     model.h, forward_options.h, head_reference.h, patch_site.h, patching.h,
     attribution_patching.h, token_attribution.h, and the attribution
     graph's attention_flow.h and quadrature.h.

Usage: check_layering.py [ROOT]          check the tree at ROOT (default: ..)
       check_layering.py --self-test     check that each rule can fail
Exit status 1 with one line per violation, naming the include chain.
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
TORCH = ("torch/", "ATen/", "c10/")
SOURCES = (".h", ".cc", ".cu")
TORCH_FREE_HEADERS = [
    "server/core/model/model.h",
    "server/core/model/forward_options.h",
    "server/core/model/head_reference.h",
    "server/core/model/patch_site.h",
    "server/core/patch/patching.h",
    "server/core/patch/attribution_patching.h",
    "server/core/attribution/token_attribution.h",
    "server/core/attribution/attention_flow.h",
    "server/core/attribution/quadrature.h",
]


def includes(root, path, cache):
    """(kind, name) of each #include of `path`, relative to `root`."""
    if path not in cache:
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            text = ""
        cache[path] = [(m.group(1), m.group(2)) for m in INCLUDE.finditer(text)]
    return cache[path]


def torch_chain(root, path, cache, memo, stack=()):
    """The include chain from `path` to a libtorch header, or None."""
    if path in memo:
        return memo[path]
    if path in stack:
        return None
    memo_value = None
    for kind, name in includes(root, path, cache):
        if kind == "<" and name.startswith(TORCH):
            memo_value = [path, "<" + name + ">"]
            break
        if kind == '"' and os.path.exists(os.path.join(root, name)):
            sub = torch_chain(root, name, cache, memo, stack + (path,))
            if sub:
                memo_value = [path] + sub
                break
    memo[path] = memo_value
    return memo_value


def files_under(root, folder):
    base = os.path.join(root, folder)
    if os.path.isfile(base):
        return [folder]
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d not in ("build", "__pycache__")]
        for name in filenames:
            if name.endswith(SOURCES):
                out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(out)


def check(root):
    cache, memo, problems = {}, {}, []
    outside = []
    for folder in ("common", "client", "server/service", "server/main.cc"):
        outside += files_under(root, folder)
    for path in outside + [h for h in TORCH_FREE_HEADERS
                           if os.path.exists(os.path.join(root, h))]:
        chain = torch_chain(root, path, cache, memo)
        if chain:
            problems.append("reaches libtorch: " + " -> ".join(chain))
    forbidden = {
        "common": ("server/", "client/"),
        "client": ("server/",),
        "server/core": ("server/service/", "client/"),
    }
    for folder, prefixes in forbidden.items():
        for path in files_under(root, folder):
            for kind, name in includes(root, path, cache):
                if kind == '"' and name.startswith(prefixes):
                    problems.append(f"{path} includes {name} (an arrow back up)")
    return problems


def self_test():
    """Each rule on a tree made to break it: the check must report it."""
    cases = {
        "service reaches torch through a core header": {
            "server/service/x.cc": '#include "server/core/model/engine.h"\n',
            "server/core/model/engine.h": "#include <torch/types.h>\n",
        },
        "a torch-free header includes torch": {
            "server/core/model/model.h": "#include <ATen/ATen.h>\n",
        },
        "common includes the server": {
            "common/a.h": '#include "server/core/model/model.h"\n',
            "server/core/model/model.h": "\n",
        },
        "the core includes the service": {
            "server/core/x.cc": '#include "server/service/rpc/y.h"\n',
            "server/service/rpc/y.h": "\n",
        },
    }
    failed = 0
    for name, files in cases.items():
        tmp = tempfile.mkdtemp()
        try:
            for path, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
                with open(os.path.join(tmp, path), "w") as f:
                    f.write(text)
            if not check(tmp):
                print(f"self-test: the check missed: {name}")
                failed += 1
        finally:
            shutil.rmtree(tmp)
    clean = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(clean, "server/service"))
        with open(os.path.join(clean, "server/service/ok.cc"), "w") as f:
            f.write("#include <vector>\n")
        if check(clean):
            print("self-test: the check refused a clean tree")
            failed += 1
    finally:
        shutil.rmtree(clean)
    return failed


def main(argv):
    if argv[1:] == ["--self-test"]:
        return 1 if self_test() else 0
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if not problems:
        print("layering: no file outside the core reaches libtorch; no arrow "
              "back up")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
