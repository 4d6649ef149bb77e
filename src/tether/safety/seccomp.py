"""The seccomp filter bubblewrap installs in the sandbox: no sockets that leave it, no io_uring.

A fresh network namespace already cuts every IP connection, but a Unix socket
is a file: a host service listening under /run, /var/tmp or a home folder
answers a `connect()` from any namespace that can see the path. Hiding every
folder that may hold one cannot be done by a list, so the filter refuses the
call that every such connection starts with: `socket(AF_UNIX, ...)` fails
with EACCES ("Permission denied"). The network namespace confines only some
socket families: vsock reaches the hypervisor and local VM services from any
namespace, and others (Bluetooth, TIPC, raw packets, ...) are no use to a
build, so `socket()` makes only the families in `SOCKET_FAMILIES_ALLOWED`
(IP, which the namespace cuts off, and netlink, which only sees it); every
other one fails with EAFNOSUPPORT. `socketpair()` stays allowed: it makes two
connected ends of an anonymous pair (asyncio, subprocess plumbing), which
cannot reach anything outside. `io_uring_setup` fails with ENOSYS, because an
io_uring can create a socket without the `socket` system call the filter sees.

The program is classic BPF (what bubblewrap's `--seccomp FD` reads: an array
of `struct sock_filter`), assembled here with `struct` for x86_64 and aarch64.
A system call from any other ABI (i386 or x32 on x86_64, arm32 on aarch64,
where `socketcall` would hide the socket family from the filter) kills the
process.
"""

from __future__ import annotations

import errno
import platform
import struct
import sys

AF_UNIX = 1
SOCKET_FAMILIES_ALLOWED = (2, 10, 16)
"""AF_INET, AF_INET6 and AF_NETLINK: what a fresh network namespace confines."""
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {
    # (socket, io_uring_setup)
    "x86_64": (41, 425),
    "aarch64": (198, 425),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_NR, _ARCH, _ARG0 = 0, 4, 16
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000


def machine() -> str:
    name = platform.machine().lower()
    return _ALIASES.get(name, name)


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _low_word_offset(offset: int) -> int:
    """A 64-bit argument's low 32 bits (the whole of an `int` argument) sit first on little-endian."""
    return offset if sys.byteorder == "little" else offset + 4


def unix_socket_filter(arch: str | None = None) -> bytes | None:
    """The compiled filter for `arch` (default: this machine); None where we have no table."""
    arch = arch or machine()
    if arch not in AUDIT_ARCH:
        return None
    socket_nr, io_uring_nr = SYSCALLS[arch]
    refuse_socket = RET_ERRNO | errno.EACCES
    refuse_family = RET_ERRNO | errno.EAFNOSUPPORT
    allowed = len(SOCKET_FAMILIES_ALLOWED)
    no_io_uring = RET_ERRNO | errno.ENOSYS
    # Jump offsets count instructions skipped after the jump itself.
    program = [
        _insn(_LD_ABS, _ARCH),
        _insn(_JEQ, AUDIT_ARCH[arch], jt=1),  # 1: native ABI? skip the kill
        _insn(_RET, RET_KILL_PROCESS),
        _insn(_LD_ABS, _NR),
    ]
    if arch == "x86_64":  # x32 numbers are the x86_64 ones with a high bit set
        program += [_insn(_JSET, X32_SYSCALL_BIT, jf=1), _insn(_RET, RET_KILL_PROCESS)]
    program += [
        _insn(_JEQ, io_uring_nr, jf=1),
        _insn(_RET, no_io_uring),
        _insn(_JEQ, socket_nr, jf=allowed + 4),  # not socket(): on to the final allow
        _insn(_LD_ABS, _low_word_offset(_ARG0)),
        _insn(_JEQ, AF_UNIX, jf=1),
        _insn(_RET, refuse_socket),
        # Each allowed family jumps over the rest of the list and the refusal to the allow.
        *(_insn(_JEQ, family, jt=allowed - i) for i, family in enumerate(SOCKET_FAMILIES_ALLOWED)),
        _insn(_RET, refuse_family),
        _insn(_RET, RET_ALLOW),
    ]
    return b"".join(program)
