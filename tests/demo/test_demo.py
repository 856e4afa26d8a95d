#!/usr/bin/python3
"""`make demo` as a user runs it, small: scripts/demo.sh on the shipped
model with a few test rows into a scratch folder, then its index page
loaded in headless Chromium, where every figure must load and lay out
(an <img> of a broken or missing SVG fires onerror and has no size).

  tests/demo/test_demo.py   (BERTOLOGY_BUILD_DIR: the build, default build)
"""

import html.parser
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..",
                                          ".."))
BUILD_DIR = os.environ.get("BERTOLOGY_BUILD_DIR",
                           os.path.join(SOURCE_DIR, "build"))
CHROMIUM = "/usr/bin/chromium"


class Images(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.images.append(a["src"])
        elif tag == "a":
            self.links.append(a["href"])


class DemoTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bertology-demo-")
        cls.out = os.path.join(cls.tmp, "demo")
        env = dict(os.environ, BERTOLOGY_DEMO_EXAMPLES="40",
                   BERTOLOGY_DEMO_OUT=cls.out)
        cls.demo = subprocess.run(
            [os.path.join(SOURCE_DIR, "scripts", "demo.sh"), BUILD_DIR],
            env=env, capture_output=True, text=True, timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_runs_every_part(self):
        self.assertEqual(self.demo.returncode, 0, self.demo.stderr[-3000:])
        for part in ("classify:", "attention:", "sweep (the seed study)",
                     "analyze:", "importance", "compare:", "segment:",
                     "mean ablation", "patch:", "attribute:",
                     "index.html: 16 figures"):
            self.assertIn(part, self.demo.stdout)

    def test_index_renders_in_chromium(self):
        self.assertEqual(self.demo.returncode, 0, self.demo.stderr[-3000:])
        index = os.path.join(self.out, "index.html")
        parser = Images()
        with open(index) as f:
            parser.feed(f.read())
        self.assertEqual(len(parser.links), 16)
        # All but the head view and the attribution heatmap (HTML pages).
        self.assertEqual(len(parser.images), 14)
        for link in parser.links:
            self.assertTrue(os.path.exists(os.path.join(self.out, link)), link)
        if not os.path.exists(CHROMIUM):
            self.skipTest("chromium not installed")
        # A page beside the index with the same <img>s, which records each
        # one's load or error and its laid-out size.
        check = os.path.join(self.out, "check.html")
        imgs = "".join('<img src="%s">' % src for src in parser.images)
        with open(check, "w") as f:
            f.write("<!DOCTYPE html><html><body>" + imgs + """
<script>
const imgs = [...document.images];
let done = 0, failed = [];
function settle() {
  if (++done < imgs.length) return;
  const sized = imgs.filter(i => i.naturalWidth > 0 && i.naturalHeight > 0);
  document.body.setAttribute('data-loaded', sized.length);
  document.body.setAttribute('data-failed', failed.join(' '));
}
imgs.forEach(i => {
  if (i.complete) { if (!i.naturalWidth) failed.push(i.src); settle(); return; }
  i.onload = settle;
  i.onerror = () => { failed.push(i.getAttribute('src')); settle(); };
});
</script></body></html>""")
        r = subprocess.run(
            ["timeout", "120", CHROMIUM, "--headless", "--no-sandbox",
             "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--virtual-time-budget=10000",
             "--user-data-dir=" + os.path.join(self.tmp, "chromium-profile"),
             "--dump-dom", "file://" + check],
            capture_output=True, text=True, timeout=180)
        self.assertIn('data-failed=""', r.stdout, r.stderr[-2000:])
        self.assertIn('data-loaded="%d"' % len(parser.images), r.stdout,
                      r.stdout[-2000:])


if __name__ == "__main__":
    unittest.main()
