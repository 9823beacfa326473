"""One GPU identity (devices/identity.py): UUID and PCI spellings of NVML and torch, MIG entries of
CUDA_VISIBLE_DEVICES, and matching that never compares indices across NVML's and torch's spaces."""

from __future__ import annotations

import pytest

from arignote.devices.identity import GPUIdentity, parse_visible_devices, pci_key, uuid_key
from arignote.devices.info import GPUInfo
from arignote.devices.snapshot import NA, GPUSnapshot


@pytest.mark.parametrize("text, key", [
    ("00000000:07:00.0", "0000:07:00.0"),  # NVML: 8-digit domain
    ("0000:07:00.0", "0000:07:00.0"),  # torch / sysfs
    ("0000:AF:00.0", "0000:af:00.0"),  # upper-case hex
    ("00000001:3B:00.0", "0001:3b:00.0"),  # a second PCI domain stays apart
    ("n/a", ""), (NA, ""), (None, ""), ("07:00.0", ""), ("zz:07:00.0", ""),
])
def test_pci_bus_ids_of_nvml_and_torch_give_one_key(text, key):
    assert pci_key(text) == key


def test_uuid_key_drops_nvmls_prefix():
    assert uuid_key("GPU-8a1f2c3d") == uuid_key("8a1f2c3d") == "8a1f2c3d"
    assert uuid_key(NA) == uuid_key(None) == "" and uuid_key(" GPU-ab ") == "ab"


def test_the_same_gpu_seen_by_nvml_and_by_torch():
    nvml_side = GPUSnapshot(index=3, uuid="GPU-8a1f", name="A100", pci_bus_id="00000000:41:00.0")
    torch_side = GPUInfo(index=0, name="A100", pci_bus_id="0000:41:00.0", total_memory=1, free_memory=1,
                         uuid="8a1f")
    a, b = GPUIdentity.of(nvml_side), GPUIdentity.of(torch_side)
    assert (a.index, a.uuid, a.pci_bus_id) == (3, "8a1f", "0000:41:00.0")
    assert a.same_gpu(b) and b.same_gpu(a) and a.cuda_name == b.cuda_name == "GPU-8a1f"
    # same index in the two spaces is no evidence; different UUIDs win over an equal bus id
    assert not GPUIdentity(index=0, uuid="x").same_gpu(GPUIdentity(index=0, uuid="y"))
    assert not GPUIdentity(index=0, uuid="x", pci_bus_id="0000:41:00.0").same_gpu(
        GPUIdentity(index=0, uuid="y", pci_bus_id="0000:41:00.0"))
    # without UUIDs (an inventory file), the bus id decides; without either, nothing matches
    assert GPUIdentity(pci_bus_id="0000:41:00.0").same_gpu(GPUIdentity(uuid="z", pci_bus_id="0000:41:00.0"))
    assert not GPUIdentity(index=1).same_gpu(GPUIdentity(index=1))
    assert GPUIdentity.of(GPUSnapshot(index=0, uuid=NA, pci_bus_id=NA)) == GPUIdentity(index=0)


def test_cuda_visible_devices_with_indices_uuids_and_mig_instances():
    got = parse_visible_devices("0, GPU-8a1f, MIG-4b2c9d, MIG-GPU-8a1f2c/2/0")
    assert [(e.index, e.uuid, e.mig) for e in got] == [
        (0, "", ""), (None, "8a1f", ""), (None, "", "4b2c9d"), (None, "8a1f2c", "GPU-8a1f2c/2/0")]
    whole = GPUIdentity(index=0, uuid="8a1f2c77")
    other = GPUIdentity(index=1, uuid="99")
    assert [e.names(whole) for e in got] == [True, True, False, True]  # a UUID prefix names it, as CUDA
    assert [e.names(other) for e in got] == [False, False, False, False]


@pytest.mark.parametrize("value, shown", [
    (None, None), ("", []), ("-1", []), ("0,-1,2", ["0"]), ("1,junk,2", ["1"]), (" 1, 3 ", ["1", "3"]),
])
def test_cuda_stops_at_the_first_invalid_entry(value, shown):
    found = parse_visible_devices(value)
    assert (None if found is None else [str(e) for e in found]) == shown
