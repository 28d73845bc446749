#!/bin/bash
printf 'SOURCES := $(sort $(wildcard src/*.txt))\n\nbuild/site.txt: $(SOURCES)\n\tmkdir -p build\n\tcat $^ > $@\n\nclean:\n\trm -rf build\n\n.PHONY: clean\n' > Makefile
