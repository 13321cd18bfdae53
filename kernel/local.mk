# kernel: see Makefile.am
