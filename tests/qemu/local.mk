# tests/qemu: the QEMU rig (pkeys tests under an emulated CPU)
