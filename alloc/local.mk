# alloc: see Makefile.am
