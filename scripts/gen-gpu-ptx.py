#!/usr/bin/env python3
"""Regenerate crates/yardstick-workloads/src/micro/gpu/kernels.ptx from kernels.cu with NVRTC.

The PTX is committed (the binary embeds it; users need only the CUDA driver). Run this after
editing kernels.cu, on any machine with libnvrtc (no GPU needed), e.g.:

    python3 -m venv /tmp/nvrtc && /tmp/nvrtc/bin/pip install nvidia-cuda-nvrtc-cu12
    /tmp/nvrtc/bin/python scripts/gen-gpu-ptx.py

It targets compute_70 (Volta): the driver JIT-compiles the PTX for any later GPU.
"""
import ctypes
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "crates", "yardstick-workloads", "src", "micro", "gpu", "kernels.cu")
OUT = SRC[: -len(".cu")] + ".ptx"


def load_nvrtc():
    names = ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]
    for site in sys.path:
        names += glob.glob(os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so*"))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    sys.exit("libnvrtc not found: pip install nvidia-cuda-nvrtc-cu12 (or put CUDA's lib64 on LD_LIBRARY_PATH)")


def main():
    nvrtc = load_nvrtc()
    src = open(SRC, "rb").read()
    prog = ctypes.c_void_p()
    check = lambda rc, what: rc == 0 or sys.exit(f"{what} failed: {rc}")
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"kernels.cu", 0, None, None), "create")
    opts = [b"--gpu-architecture=compute_70", b"--std=c++14"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if log.value.strip():
        print(log.value.decode(), file=sys.stderr)
    check(rc, "compile")
    nvrtc.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    check(nvrtc.nvrtcGetPTX(prog, ptx), "get PTX")
    text = ptx.value.decode()
    # NVRTC stamps its own PTX ISA version (8.8 for CUDA 12.9), which drivers older than that
    # toolkit refuse to JIT. These kernels use nothing newer than ISA 7.0 (CUDA 11.0), so the
    # header says 7.0 and any driver since CUDA 11 loads them (checked with ptxas in CI's
    # absence: `ptxas -arch=sm_70 kernels.ptx` and `-arch=sm_90`).
    text = re.sub(r"^\.version \d+\.\d+$", ".version 7.0", text, count=1, flags=re.M)
    header = "// Generated from kernels.cu by scripts/gen-gpu-ptx.py; do not edit.\n"
    with open(OUT, "w") as f:
        f.write(header + text)
    print(f"wrote {os.path.relpath(OUT)} ({len(ptx.value)} bytes)")


if __name__ == "__main__":
    main()
