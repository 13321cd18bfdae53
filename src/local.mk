# src: see Makefile.am
