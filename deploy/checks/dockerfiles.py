"""The Dockerfiles, read as text (no Docker engine here): pinned base
images, --no-install-recommends, a non-root final user, build stages
without test tools (scripts/install-deps.sh --list), COPY sources present
and not .dockerignored, the default model baked in; and for the CUDA
image, devel build and base runtime stages of one CUDA version, the
libtorch zip checked by SHA-256 and matched to CUDA, its protobuf headers
removed, LD_LIBRARY_PATH appended.
"""

import fnmatch
import glob
import json
import os
import re
import subprocess

from .common import SOURCE, TEST_TOOLS


# ------------------------------------------------------------ Dockerfiles
def stages(text):
    """[(stage name, FROM image, body text)]."""
    text = re.sub(r"\\\n", " ", text)
    out = []
    for line in text.splitlines():
        m = re.match(r"FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", line,
                     re.I)
        if m:
            out.append([m.group(2) or str(len(out)), m.group(1), ""])
        elif out:
            out[-1][2] += line + "\n"
    return out


def copies(text):
    """[(flags, sources, dest)] of the COPY instructions."""
    out = []
    for m in re.finditer(r"^COPY\s+((?:--\S+\s+)*)(.+)$",
                         re.sub(r"\\\n", " ", text), re.M):
        parts = m.group(2).split()
        if parts and parts[0].startswith("["):
            parts = json.loads(m.group(2))
        out.append((m.group(1), parts[:-1], parts[-1] if parts else ""))
    return out


def expand_args(text, args):
    """`text` with ${ARG} / $ARG replaced by the ARG defaults in `args`."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)),
                  text)


def pinned(image, args):
    image = expand_args(image, args)
    if "@sha256:" in image:
        return True
    tag = image.rpartition(":")[2] if ":" in image.split("/")[-1] else ""
    # An exact version: major.minor[.patch] (Debian's point releases are
    # major.minor), or a dated tag; not "12", "latest" or "bookworm".
    return bool(re.search(r"^\d+\.\d+|\d{8}", tag))


def dockerignore_patterns(rel):
    path = os.path.join(SOURCE, rel + ".dockerignore")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def check_dockerfile(rel, text, install_lists, out):
    args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text, re.M))
    st = stages(text)
    names = {s[0] for s in st}
    if not st:
        out.append("%s: no FROM" % rel)
        return
    for name, image, body in st:
        if image not in names and not pinned(image, args):
            given = expand_args(image, args)
            out.append("%s: FROM %s (stage %s) is not pinned to a digest or "
                       "an exact version" % (rel, image if given == image else
                                             "%s = %s" % (image, given), name))
    logical = re.sub(r"\\\n", " ", text)
    for line in logical.splitlines():
        for cmd in re.split(r"&&|;", line):
            if re.search(r"apt-get\s+(-\S+\s+)*install", cmd) and \
                    "--no-install-recommends" not in cmd:
                out.append("%s: `%s` lacks --no-install-recommends" %
                           (rel, " ".join(cmd.split())[:80]))
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    if not users or users[-1].split(":")[0] in ("root", "0"):
        out.append("%s: the final image runs as root (USER %s)" % (
            rel, users[-1] if users else "unset"))
    # Build stages (all but the last) install build packages only.
    ignored = dockerignore_patterns(rel)
    for name, image, body in st[:-1]:
        for tool in TEST_TOOLS:
            if re.search(r"(install|\s)%s(\s|$)" % re.escape(tool), body) and \
                    "apt-get" in body:
                out.append("%s: build stage %s installs test tool %s" %
                           (rel, name, tool))
        runs = [l for l in body.splitlines() if l.startswith("RUN")]
        for m in re.finditer(r"install-deps\.sh((?:[ \t]+--[\w-]+)*)",
                             "\n".join(runs)):
            flags = m.group(1).split()
            listed = install_lists.get(" ".join(flags))
            if "--build-only" not in flags:
                out.append("%s: build stage %s runs install-deps.sh without "
                           "--build-only (installs the test tools)" % (rel,
                                                                     name))
            elif listed is None:
                out.append("%s: install-deps.sh %s: no package list" %
                           (rel, " ".join(flags)))
            else:
                for tool in TEST_TOOLS:
                    if tool in listed:
                        out.append("%s: install-deps.sh --build-only installs"
                                   " test tool %s" % (rel, tool))
    # COPY sources exist in the context and are not excluded by the
    # Dockerfile's .dockerignore.
    for flags, sources, dest in copies(text):
        if "--from" in flags:
            continue
        for src in sources:
            if not glob.glob(os.path.join(SOURCE, src)):
                out.append("%s: COPY %s: no such path in the repository" %
                           (rel, src))
            for pat in ignored:
                if not pat.startswith("!") and (
                        fnmatch.fnmatch(src.rstrip("/"), pat) or
                        src.startswith(pat.rstrip("/") + "/")):
                    out.append("%s: COPY %s is excluded by %s.dockerignore "
                               "(%s)" % (rel, src, rel, pat))
    if "/models/default" not in text:
        out.append("%s: the default model is not baked in at /models/default"
                   % rel)
    model_files = set()
    for flags, sources, dest in copies(text):
        if dest.rstrip("/") == "/models/default" and "--from" not in flags:
            for src in sources:
                path = os.path.join(SOURCE, src)
                model_files |= set(os.listdir(path)) if os.path.isdir(path) \
                    else {os.path.basename(src)}
    need = {"config.json", "vocab.txt"}
    if model_files and (need - model_files or not model_files & {
            "model.safetensors", "pytorch_model.bin"}):
        out.append("%s: COPY to /models/default lacks %s" % (
            rel, sorted(need - model_files) or "the weights"))
    if rel.endswith(".cuda"):
        check_cuda(rel, st, args, text, out)


def check_cuda(rel, st, args, text, out):
    def sub(s):
        return expand_args(s, args)
    images = [sub(i) for _, i, _ in st]
    cuda = [re.match(r"nvidia/cuda:(\d+\.\d+\.\d+)-(\S*?)(devel|runtime|base)"
                     r"-(ubuntu[\d.]+)", i) for i in images]
    if not cuda[0] or cuda[0].group(3) != "devel":
        out.append("%s: the build stage is not an nvidia/cuda devel image: "
                   "%s" % (rel, images[0]))
    if not cuda[-1] or cuda[-1].group(3) == "devel" or \
            "cudnn" in cuda[-1].group(2):
        out.append("%s: the runtime stage is not the smallest nvidia/cuda "
                   "image that serves (base or runtime, no devel, no cudnn: "
                   "the zip carries its CUDA libraries): %s" % (rel,
                                                               images[-1]))
    sha = args.get("LIBTORCH_SHA256", "")
    if not re.fullmatch(r"[0-9a-f]{64}", sha) or \
            not re.search(r"\$\{?LIBTORCH_SHA256\}?\s+/tmp/libtorch\.zip\"?"
                          r"\s*\|\s*sha256sum -c", text):
        out.append("%s: the libtorch zip is not checked against a pinned "
                   "SHA-256 (ARG LIBTORCH_SHA256 and sha256sum -c)" % rel)
    unzip = text.find("unzip -q /tmp/libtorch.zip")
    prep = text.find("scripts/prepare-libtorch.sh /opt/libtorch")
    if unzip < 0 or prep < unzip:
        out.append("%s: scripts/prepare-libtorch.sh /opt/libtorch does not "
                   "run after unpacking: the bundled protobuf headers in "
                   "include/google shadow the system's" % rel)
    for m in re.finditer(r"^ENV LD_LIBRARY_PATH=(\S+)", text, re.M):
        if "LD_LIBRARY_PATH" not in m.group(1):
            out.append("%s: ENV LD_LIBRARY_PATH=%s replaces the base image's "
                       "(/usr/local/nvidia/lib64, where the device plugin "
                       "mounts the driver) instead of appending" %
                       (rel, m.group(1)))
    if cuda[0] and cuda[-1] and (cuda[0].group(1), cuda[0].group(4)) != (
            cuda[-1].group(1), cuda[-1].group(4)):
        out.append("%s: build (%s) and runtime (%s) CUDA versions differ" %
                   (rel, images[0], images[-1]))
    url = re.search(r"https://download\.pytorch\.org/libtorch/(cu\d+)/"
                    r"(libtorch-cxx11-abi-shared-with-deps-[^\s\"']+\.zip)",
                    sub(text))
    if not url:
        out.append("%s: no official cxx11-ABI CUDA libtorch zip from "
                   "download.pytorch.org" % rel)
    elif cuda[0] and url.group(1) != "cu" + "".join(
            cuda[0].group(1).split(".")[:2]):
        out.append("%s: libtorch %s does not match CUDA %s" % (
            rel, url.group(1), cuda[0].group(1)))
    if "-DCMAKE_PREFIX_PATH=/opt/libtorch" not in text:
        out.append("%s: cmake is not given -DCMAKE_PREFIX_PATH=/opt/libtorch"
                   % rel)


def install_lists():
    """Packages scripts/install-deps.sh would install, per option set."""
    out = {}
    script = os.path.join(SOURCE, "scripts", "install-deps.sh")
    for opts in ("", "--build-only", "--build-only --no-torch"):
        r = subprocess.run([script, "--list"] + opts.split(),
                           capture_output=True, text=True)
        out[opts] = r.stdout.split() if r.returncode == 0 else None
    return out
