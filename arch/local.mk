# arch: generic only for now (x86_64 PKRU arrives with the pkeys backend)
