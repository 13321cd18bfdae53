# arch: see Makefile.am
