#include "client/render/head_view_script.h"

namespace bertology::render {

const char kHeadViewCss[] = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 16px;
       color: #222; }
h1 { font-size: 18px; margin: 0 0 4px 0; }
.prediction { font-size: 13px; color: #555; margin: 0 0 10px 0; }
.controls { margin: 8px 0 12px 0; font-size: 13px; }
.controls label { margin-right: 16px; }
.panes { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.token { font-size: 13px; cursor: pointer; }
.token.seg1 { fill: #7b3294; }
.token.active { font-weight: bold; }
.token-bg.active { fill: #fff2b3; }
.hint { font-size: 12px; color: #777; }
)css";

const char kHeadViewScript[] = R"js(
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('attention-data').textContent);
  var tokens = data.tokens, T = tokens.length, segs = data.segments || [];
  var layerSel = document.getElementById('layer');
  var headSel = document.getElementById('head');
  var view = document.getElementById('view');
  var matrix = document.getElementById('matrix');
  var byKey = {}, layers = [], numHeads = 1;
  data.maps.forEach(function (m) {
    byKey[m.layer + ':' + m.head] = m;
    if (layers.indexOf(m.layer) < 0) layers.push(m.layer);
    numHeads = Math.max(numHeads, m.head + 1);
  });
  layers.sort(function (a, b) { return a - b; });
  layers.forEach(function (l) { layerSel.add(new Option('Layer ' + l, l)); });

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fillHeads() {
    var l = Number(layerSel.value), prev = headSel.value;
    headSel.textContent = '';
    data.maps.filter(function (m) { return m.layer === l; })
        .map(function (m) { return m.head; })
        .sort(function (a, b) { return a - b; })
        .forEach(function (h) { headSel.add(new Option('Head ' + h, h)); });
    for (var i = 0; i < headSel.options.length; ++i) {
      if (headSel.options[i].value === prev) headSel.value = prev;
    }
  }
  function weight(m, i, j) {
    var w = m.w[i * T + j];
    return (typeof w === 'number' && isFinite(w)) ? w : 0;
  }

  function drawHeadView(m, color) {
    view.textContent = '';
    var rowH = 20, colW = 150, gap = 200, top = 24;
    var width = colW * 2 + gap, height = top + T * rowH + 8;
    view.setAttribute('width', width);
    view.setAttribute('height', height);
    view.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    var hdr = el('text', {x: colW, y: 14, 'text-anchor': 'end',
                          'class': 'hint'}, view);
    hdr.textContent = 'from';
    hdr = el('text', {x: colW + gap, y: 14, 'class': 'hint'}, view);
    hdr.textContent = 'to';
    var bgs = el('g', {}, view), g = el('g', {}, view), txt = el('g', {}, view);
    var lines = [];
    for (var i = 0; i < T; ++i) {
      for (var j = 0; j < T; ++j) {
        var w = weight(m, i, j);
        if (w < 0.01) continue;
        var ln = el('line', {
          x1: colW + 6, y1: top + i * rowH + rowH / 2 - 4,
          x2: colW + gap - 6, y2: top + j * rowH + rowH / 2 - 4,
          stroke: color, 'stroke-width': 2, 'stroke-opacity': w.toFixed(3),
          'class': 'attn'}, g);
        ln.from = i; ln.to = j;
        lines.push(ln);
      }
    }
    function show(side, k, on) {
      lines.forEach(function (ln) {
        var mine = side === 'left' ? ln.from === k : ln.to === k;
        ln.style.display = (!on || mine) ? '' : 'none';
      });
      var q = view.querySelectorAll('[data-side="' + side + '"][data-i="' +
                                    k + '"]');
      for (var n = 0; n < q.length; ++n) q[n].classList.toggle('active', on);
    }
    [['left', 0, 'end', colW], ['right', colW + gap, 'start', colW + gap]]
        .forEach(function (side) {
      for (var i = 0; i < T; ++i) {
        var y = top + i * rowH;
        var bg = el('rect', {x: side[1], y: y, width: colW, height: rowH - 2,
                             fill: 'transparent', 'class': 'token-bg',
                             'data-side': side[0], 'data-i': i}, bgs);
        var t = el('text', {x: side[3] + (side[0] === 'left' ? -2 : 2),
                            y: y + rowH / 2 + 1, 'text-anchor': side[2],
                            'class': 'token ' + side[0] +
                                (segs[i] === 1 ? ' seg1' : ''),
                            'data-side': side[0], 'data-i': i}, txt);
        t.textContent = tokens[i];
        [bg, t].forEach(function (e) {
          e.addEventListener('mouseenter', show.bind(null, side[0], i, true));
          e.addEventListener('mouseleave', show.bind(null, side[0], i, false));
        });
      }
    });
  }

  function drawMatrix(m) {
    matrix.textContent = '';
    var cell = Math.max(4, Math.min(18, Math.floor(480 / Math.max(1, T))));
    var size = cell * T + 4;
    matrix.setAttribute('width', size);
    matrix.setAttribute('height', size);
    for (var i = 0; i < T; ++i) {
      for (var j = 0; j < T; ++j) {
        var w = Math.max(0, Math.min(1, weight(m, i, j)));
        var c = Math.round(255 - w * 200), b = Math.round(255 - w * 100);
        var r = el('rect', {x: 2 + j * cell, y: 2 + i * cell, width: cell,
                            height: cell, fill: 'rgb(' + c + ',' + c + ',' + b +
                            ')', 'class': 'mcell'}, matrix);
        el('title', {}, r).textContent =
            tokens[i] + ' \u2192 ' + tokens[j] + ': ' + w.toFixed(4);
      }
    }
  }

  function draw() {
    var m = byKey[layerSel.value + ':' + headSel.value];
    if (!m) {
      view.textContent = '';
      document.body.setAttribute('data-rendered', 'none');
      return;
    }
    var color = 'hsl(' + Math.round(m.head * 360 / numHeads) + ',70%,40%)';
    drawHeadView(m, color);
    drawMatrix(m);
    document.body.setAttribute('data-rendered', 'L' + m.layer + 'H' + m.head);
  }
  layerSel.addEventListener('change', function () { fillHeads(); draw(); });
  headSel.addEventListener('change', draw);
  fillHeads();
  draw();
})();
)js";

}  // namespace bertology::render
