#!/bin/sh
# The browser tests drive Debian's chromium with Playwright (never a downloaded browser).
# Install it when missing and we may (root with apt-get); otherwise say what to install.
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests..." >&2
  (apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium >/dev/null 2>&1 || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium >/dev/null; }) \
    && exit 0
fi
echo "warning: /usr/bin/chromium is missing; the browser tests will fail. Install it with: sudo apt-get install chromium" >&2
exit 0
