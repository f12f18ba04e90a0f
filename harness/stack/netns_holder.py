"""The holder image: a container that only keeps a network namespace alive for a relay's containers to join.

A relay's service needs its network before its first instruction (it connects to its database as it
starts), and Docker makes a container's namespace only as it starts the container's process. So the
harness starts a holder first, with no network of Docker's (`network_mode="none"`), wires its namespace
(relaychaos.sandbox.container_network), and starts each of the relay's containers in it
(`network_mode="container:HOLDER"`): killed and started again, a relay keeps its address.

The image holds one file, /hold: a static program of three instructions that waits for a signal
forever (pause(2) on x86-64, ppoll(2) on arm64), written here and `docker import`ed on first use, so
that no registry, compiler or setup step is needed.
"""

from __future__ import annotations

import io
import platform
import struct
import tarfile
from typing import TYPE_CHECKING

from relaychaos.errors import RelayError

if TYPE_CHECKING:
    from docker import DockerClient  # the SDK ships no types: these are Any to the type checker

IMAGE = "relaychaos/netns-holder:1"
BASE = 0x400000  # where the one segment is mapped
# machine: (ELF e_machine, the code: wait for a signal, again)
CODE = {
    # mov eax, 34 (pause); syscall; jmp back to the mov
    "x86_64": (0x3E, bytes.fromhex("b8 22 00 00 00  0f 05  eb f7")),
    # mov x0..x3, #0; mov x8, #73 (ppoll: no descriptors, no time-out); svc #0; b back to the first mov
    "aarch64": (
        0xB7,
        struct.pack("<7I", 0xD2800000, 0xD2800001, 0xD2800002, 0xD2800003, 0xD2800928, 0xD4000001, 0x17FFFFFA),
    ),
}


def program(machine: str) -> bytes:
    """The holder's program for `machine` (platform.machine()), a static ELF executable of one segment."""
    if machine not in CODE:
        raise RelayError(
            f"the harness has no holder program for a {machine} machine",
            where="relaychaos.stack.netns_holder",
            fix=f"run relays from container images on {' or '.join(CODE)}, or import an image {IMAGE} whose "
            "entrypoint waits forever",
        )
    e_machine, code = CODE[machine]
    header_size, segment_header_size = 64, 56
    entry = BASE + header_size + segment_header_size
    size = header_size + segment_header_size + len(code)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, version 1, System V
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 2, e_machine, 1, entry, header_size, 0, 0, header_size, segment_header_size, 1, 0, 0, 0
    )
    segment = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, size, size, 0x1000)  # PT_LOAD, read + execute
    return header + segment + code


def ensure(client: DockerClient) -> str:
    """The holder image, imported now when the daemon does not have it; its name."""
    try:
        client.images.get(IMAGE)
        return IMAGE
    except Exception:  # docker.errors.ImageNotFound, lazily imported by the caller's module: import it below
        pass
    data = program(platform.machine())
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo("hold")
        info.size, info.mode = len(data), 0o555
        tar.addfile(info, io.BytesIO(data))
    client.api.import_image_from_data(
        archive.getvalue(), repository=IMAGE.split(":")[0], tag=IMAGE.split(":")[1], changes=['ENTRYPOINT ["/hold"]']
    )
    return IMAGE
