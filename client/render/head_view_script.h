// The inline CSS and JavaScript of the attention page's head view, kept
// apart from the C++ that assembles the page.
#ifndef BERTOLOGY_CLIENT_RENDER_HEAD_VIEW_SCRIPT_H_
#define BERTOLOGY_CLIENT_RENDER_HEAD_VIEW_SCRIPT_H_

namespace bertology::render {

// CSS for the page (no external fonts or URLs).
extern const char kHeadViewCss[];

// Reads the JSON in <script id="attention-data">, fills <select id="layer">
// and <select id="head">, and draws into <svg id="view"> (head view: token
// columns and weighted lines; hover filters lines) and <svg id="matrix">
// (heatmap of the selected head). Tokens are set with textContent, never
// as HTML. When done it sets <body data-rendered="L{l}H{h}">.
extern const char kHeadViewScript[];

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_HEAD_VIEW_SCRIPT_H_
