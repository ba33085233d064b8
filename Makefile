# SPDX-License-Identifier: Apache-2.0
# Keybay for Linux: build and install the CLI, the first-party plugins and the plugin header.
#
#   make install [PREFIX=/usr/local] [DESTDIR=/staging] [BIN=DIR] [STRIP=] [pythondir=DIR]
#                                   BIN=DIR installs what is already built in DIR and runs no
#                                   build; STRIP= keeps the debug info (installed files are
#                                   stripped by default)
#   make uninstall [PREFIX=...] [DESTDIR=...]
#   make install-dev [PREFIX=...]   for plugin authors, no build: the header, keybay-plugin.pc,
#                                   the guide and an example plugin (PREFIX/share/doc/keybay)
#   make integrations [OUT=DIR]     the credential helpers (integrations/), built with cc against
#                                   the library in BIN (or this build); `make install` installs them
#   make test                       scripts/test.sh (every test)
#   make walkthrough                scripts/walkthrough.sh (the CLI against a throwaway store)
#
# The agent's systemd user units go to PREFIX/lib/systemd/user (keybay-agent.socket and .service,
# whose ExecStart names PREFIX/bin/keybay-methods).
#
# Layout: PREFIX/bin/keybay-methods finds its plugins in <exe dir>/../lib/keybay/plugins and
# PREFIX/lib/libkeybay.so.1 in <library dir>/keybay/plugins: both are PREFIX/lib/keybay/plugins,
# so the three must stay in that relation. That is why the library is in PREFIX/lib even for
# PREFIX=/usr (the Debian packages, debian/): in a multiarch directory (/usr/lib/<triplet>)
# the library would look in /usr/lib/<triplet>/keybay/plugins, which the CLI never searches.
#
# The Python package (bindings/python, pure Python over libkeybay.so.1) goes into pythondir:
# by default the directory under PREFIX that $(PYTHON) imports from (/usr/lib/python3/dist-packages
# for PREFIX=/usr on Debian, PREFIX/lib/python3.X/dist-packages or site-packages otherwise), with
# keybay/_installed.py written beside it naming PREFIX/lib/libkeybay.so.1, which it loads after
# KEYBAY_LIBRARY and before the soname: no LD_LIBRARY_PATH or ldconfig is needed (docs/python.md).
# `pip install ./bindings/python` finds the prefix through KEYBAY_PREFIX, else the prefix the last
# `make install` of this checkout recorded in bindings/python/_build/installed-prefix (PREFIX_RECORD;
# not with DESTDIR: a staging install is not where the library will run), else keybay.pc (its backend,
# bindings/python/_build/keybay_build.py).
#
# As root into a system prefix (PREFIX /usr or /usr/local) and without DESTDIR, the install ends
# with $(LDCONFIG), so the linker's cache knows the new library; a staging install (DESTDIR, the
# Debian packages: their trigger runs it) and one into any other prefix never run it.
#
# The CLI links the Swift runtime statically (-static-stdlib, see Package.swift), so the
# installed binary needs no Swift toolchain; only sanitizer builds (KEYBAY_SANITIZE, not
# installed) link it dynamically. The plugins are C and link only libsodium / libargon2 from
# the system.

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
CONFIG ?= release
BIN ?=
INSTALL ?= install
# The installed CLI, credential helpers, library and plugins are stripped with this (--strip-unneeded); STRIP= keeps
# their debug info and symbols (a debug install; debian/rules leaves it to dh_strip).
STRIP ?= strip
PYTHON ?= python3
LDCONFIG ?= ldconfig
# Where `make install` (without DESTDIR) records its PREFIX for `pip install ./bindings/python`;
# PREFIX_RECORD= records nothing (the tests, which never write into the checkout).
PREFIX_RECORD ?= $(TOP)/bindings/python/_build/installed-prefix
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

bindir = $(PREFIX)/bin
plugindir = $(PREFIX)/lib/keybay/plugins
includedir = $(PREFIX)/include/keybay
libdir = $(PREFIX)/lib
# The helper that runs method plugins isolated (docs/plugins.md, "Isolation"); the CLI and the
# library find it in <exe dir>/../libexec/keybay and <library dir>/../libexec/keybay.
helperdir = $(PREFIX)/libexec/keybay
pkgconfigdir = $(PREFIX)/lib/pkgconfig
docdir = $(PREFIX)/share/doc/keybay
# The first of PREFIX's site directories that $(PYTHON) searches, else the one `pip install
# --prefix` would use (then PYTHONPATH names it).
pythondir = $(shell $(PYTHON) -c 'import sys; p = sys.argv[1]; v = "python%d.%d" % sys.version_info[:2]; \
	c = [p + "/lib/python3/dist-packages", p + "/lib/" + v + "/dist-packages", p + "/lib/" + v + "/site-packages"]; \
	print(next((d for d in c if d in sys.path), c[-1]))' '$(PREFIX)' 2>/dev/null)
PYTHON_PACKAGE = $(notdir $(wildcard $(TOP)/bindings/python/keybay/*.py))
# keybay.pc's run-time path to the library, left out where the dynamic linker looks anyway.
comma := ,
rpath = $(if $(filter /usr,$(PREFIX)),,-Wl$(comma)-rpath$(comma)$${libdir})
# The agent's systemd user units (socket activation; docs/agent.md).
userunitdir = $(PREFIX)/lib/systemd/user

# Every first-party plugin (one directory under Plugins/ each; InstallTests checks that the
# installed CLI lists exactly those). Plugins/Support is no plugin: the C code they share,
# linked statically into each that uses it, so there is nothing of its own to install (each
# plugin needs only libc, libm and libsodium; the rest it opens on first use).
PLUGINS = libkeybay-file-root.so libkeybay-passphrase.so libkeybay-fido2.so libkeybay-recovery.so libkeybay-tpm2.so libkeybay-secret-service.so \
          libkeybay-tpm2-pin.so libkeybay-pkcs11.so libkeybay-portal.so
HEADER = $(TOP)/Sources/CKeybayPlugin/include/keybay_plugin.h
# The C API for hosts: libkeybay.so.1 (soname; libkeybay.so links to it), its header and keybay.pc.
CAPI_HEADER = $(TOP)/Sources/CKeybay/include/keybay/keybay.h
VERSION = $(shell sed -n 's/.*static let release = "\(.*\)"/\1/p' "$(TOP)/Sources/Keybay/API/KeybayVersion.swift")
# The installed documentation keeps docs/'s layout, so every link in it resolves in both trees:
# the guide (plugins.md) and what it links, the header beside it (docs/keybay_plugin.h is a link
# to it) and one complete example plugin with its Makefile (InstallTests checks every link).
DOCS = plugins.md cli.md format.md security.md agent.md fido2.md pkcs11.md recovery.md tpm2-pin.md
EXAMPLE = examples/c-plugin
EXAMPLE_FILES = Makefile README.md pin.c

all: build

build:
	cd "$(TOP)" && $(SWIFT) build -c $(CONFIG)

# BIN=DIR installs what is already built in DIR (no swift invocation: the tests use it).
install: $(if $(BIN),,build) install-dev install-integrations
	bin="$(if $(BIN),$(BIN),$$(cd "$(TOP)" && $(SWIFT) build -c $(CONFIG) --show-bin-path))" && \
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(bindir)" "$(DESTDIR)$(plugindir)" "$(DESTDIR)$(helperdir)" && \
	$(INSTALL) -m 0755 "$$bin/keybay-methods" "$(DESTDIR)$(bindir)/keybay-methods" && \
	$(INSTALL) -m 0755 "$$bin/keybay-plugin-host" "$(DESTDIR)$(helperdir)/keybay-plugin-host" && \
	for p in $(PLUGINS); do $(INSTALL) -m 0755 "$$bin/$$p" "$(DESTDIR)$(plugindir)/$$p" || exit 1; done && \
	$(INSTALL) -m 0755 "$$bin/libkeybay.so" "$(DESTDIR)$(libdir)/libkeybay.so.1" && \
	ln -sf libkeybay.so.1 "$(DESTDIR)$(libdir)/libkeybay.so"
	$(if $(STRIP),$(STRIP) --strip-unneeded "$(DESTDIR)$(bindir)/keybay-methods" "$(DESTDIR)$(libdir)/libkeybay.so.1" \
		"$(DESTDIR)$(helperdir)/keybay-plugin-host" \
		$(foreach p,$(PLUGINS),"$(DESTDIR)$(plugindir)/$(p)"))
	$(INSTALL) -m 0644 $(CAPI_HEADER) "$(DESTDIR)$(includedir)/keybay.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@RPATH@|$(rpath)|g' "$(TOP)/keybay.pc.in" > "$(DESTDIR)$(pkgconfigdir)/keybay.pc"
	chmod 0644 "$(DESTDIR)$(pkgconfigdir)/keybay.pc"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(PREFIX)/share/man/man1" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions"
	for page in $(MANPAGES); do $(INSTALL) -m 0644 "$(TOP)/docs/$$page" "$(DESTDIR)$(PREFIX)/share/man/man1/$$page" || exit 1; done
	$(INSTALL) -m 0644 "$(TOP)/completions/keybay-methods.bash" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods"
	@test -n "$(pythondir)" || { echo "make install: $(PYTHON) did not say where its packages go under $(PREFIX); give pythondir=DIR" >&2; exit 1; }
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(pythondir)/keybay"
	for f in $(PYTHON_PACKAGE); do $(INSTALL) -m 0644 "$(TOP)/bindings/python/keybay/$$f" "$(DESTDIR)$(pythondir)/keybay/$$f" || exit 1; done
	$(PYTHON) -c 'import sys; open(sys.argv[1], "w").write("# Written by make install: the library this package loads.\nLIBRARY = %r\nFOUND_BY = %r\n" % (sys.argv[2], sys.argv[3]))' \
		"$(DESTDIR)$(pythondir)/keybay/_installed.py" "$(libdir)/libkeybay.so.1" "make install PREFIX=$(PREFIX)"
	chmod 0644 "$(DESTDIR)$(pythondir)/keybay/_installed.py"
	$(if $(DESTDIR),,$(if $(PREFIX_RECORD),printf '%s\n' "$(PREFIX)" > "$(PREFIX_RECORD)"))
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(userunitdir)"
	$(INSTALL) -m 0644 "$(TOP)/systemd/keybay-agent.socket" "$(DESTDIR)$(userunitdir)/keybay-agent.socket"
	sed -e 's|@PREFIX@|$(PREFIX)|g' "$(TOP)/systemd/keybay-agent.service.in" > "$(DESTDIR)$(userunitdir)/keybay-agent.service"
	chmod 0644 "$(DESTDIR)$(userunitdir)/keybay-agent.service"
	$(if $(DESTDIR),,$(if $(filter /usr /usr/local,$(PREFIX)),if [ "$$(id -u)" = 0 ]; then $(LDCONFIG); fi))

# The credential helpers (integrations/, docs/integrations.md): C programs over libkeybay.so.1,
# compiled with cc from its header and linked against the built library (BIN, else this build's);
# installed in PREFIX/bin, they find the library through their run path, $ORIGIN/../lib. Each is
# linked to a file of its own and renamed into place, so an install running at the same time
# (the tests run several) never copies a half-written program.
INTEGRATIONS = git-credential-keybay docker-credential-keybay
# The CLI's manual page and the credential helpers' (docs/).
MANPAGES = keybay-methods.1 $(foreach h,$(INTEGRATIONS),$(h).1)
INTEGRATION_CFLAGS ?= -std=c11 -O2 -g -Wall -Wextra -D_DEFAULT_SOURCE -D_FORTIFY_SOURCE=2 -fstack-protector-strong
INTEGRATION_BIN = $(if $(BIN),$(BIN),$$(cd "$(TOP)" && $(SWIFT) build -c $(CONFIG) --show-bin-path))

integrations:
	bin="$(INTEGRATION_BIN)" && out="$(if $(OUT),$(OUT),$$bin/integrations)" && mkdir -p "$$out" && \
	for helper in git/git-credential-keybay docker/docker-credential-keybay; do \
	  $(CC) $(INTEGRATION_CFLAGS) -I "$(TOP)/Sources/CKeybay/include" -I "$(TOP)/integrations/common" \
	    "$(TOP)/integrations/$${helper%/*}"/*.c "$(TOP)"/integrations/common/*.c -L "$$bin" -lkeybay -lsodium \
	    -Wl,-rpath,'$$ORIGIN/../lib' -o "$$out/$${helper#*/}.$$$$" && mv -f "$$out/$${helper#*/}.$$$$" "$$out/$${helper#*/}" || exit 1; \
	done

install-integrations: integrations
	bin="$(INTEGRATION_BIN)" && $(INSTALL) -d -m 0755 "$(DESTDIR)$(bindir)" && \
	for helper in $(INTEGRATIONS); do $(INSTALL) -m 0755 "$$bin/integrations/$$helper" "$(DESTDIR)$(bindir)/$$helper" || exit 1; done
	$(if $(STRIP),$(STRIP) --strip-unneeded $(foreach h,$(INTEGRATIONS),"$(DESTDIR)$(bindir)/$(h)"))

# The plugin header, keybay-plugin.pc (prefix substituted), the guide and the example; builds nothing.
install-dev:
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(includedir)" "$(DESTDIR)$(pkgconfigdir)" "$(DESTDIR)$(docdir)/$(EXAMPLE)"
	$(INSTALL) -m 0644 $(HEADER) "$(DESTDIR)$(includedir)/keybay_plugin.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' "$(TOP)/keybay-plugin.pc.in" > "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	chmod 0644 "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	for d in $(DOCS); do $(INSTALL) -m 0644 "$(TOP)/docs/$$d" "$(DESTDIR)$(docdir)/$$d" || exit 1; done
	$(INSTALL) -m 0644 $(HEADER) "$(DESTDIR)$(docdir)/keybay_plugin.h"
	for f in $(EXAMPLE_FILES); do $(INSTALL) -m 0644 "$(TOP)/docs/$(EXAMPLE)/$$f" "$(DESTDIR)$(docdir)/$(EXAMPLE)/$$f" || exit 1; done

uninstall:
	rm -f "$(DESTDIR)$(bindir)/keybay-methods" "$(DESTDIR)$(helperdir)/keybay-plugin-host" "$(DESTDIR)$(includedir)/keybay_plugin.h" \
		"$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc" "$(DESTDIR)$(includedir)/keybay.h" "$(DESTDIR)$(pkgconfigdir)/keybay.pc" \
		"$(DESTDIR)$(libdir)/libkeybay.so.1" "$(DESTDIR)$(libdir)/libkeybay.so"
	for page in $(MANPAGES); do rm -f "$(DESTDIR)$(PREFIX)/share/man/man1/$$page"; done
	rm -f \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods" \
		"$(DESTDIR)$(userunitdir)/keybay-agent.socket" "$(DESTDIR)$(userunitdir)/keybay-agent.service"
	for p in $(PLUGINS); do rm -f "$(DESTDIR)$(plugindir)/$$p"; done
	test -z "$(pythondir)" || { for f in $(PYTHON_PACKAGE) _installed.py; do rm -f "$(DESTDIR)$(pythondir)/keybay/$$f"; done; \
		rm -rf "$(DESTDIR)$(pythondir)/keybay/__pycache__"; rmdir "$(DESTDIR)$(pythondir)/keybay" 2>/dev/null || true; }
	for d in $(DOCS) keybay_plugin.h; do rm -f "$(DESTDIR)$(docdir)/$$d"; done
	for f in $(EXAMPLE_FILES); do rm -f "$(DESTDIR)$(docdir)/$(EXAMPLE)/$$f"; done
	for helper in $(INTEGRATIONS); do rm -f "$(DESTDIR)$(bindir)/$$helper"; done
	rmdir "$(DESTDIR)$(plugindir)" "$(DESTDIR)$(PREFIX)/lib/keybay" "$(DESTDIR)$(includedir)" 2>/dev/null || true
	rmdir "$(DESTDIR)$(helperdir)" "$(DESTDIR)$(PREFIX)/libexec" 2>/dev/null || true
	rmdir "$(DESTDIR)$(userunitdir)" "$(DESTDIR)$(PREFIX)/lib/systemd" 2>/dev/null || true
	rmdir "$(DESTDIR)$(docdir)/$(EXAMPLE)" "$(DESTDIR)$(docdir)/examples" "$(DESTDIR)$(docdir)" 2>/dev/null || true

test:
	"$(TOP)/scripts/test.sh"

walkthrough:
	"$(TOP)/scripts/walkthrough.sh"

.PHONY: all build install install-dev install-integrations integrations uninstall test walkthrough
