// The segmentation view of one example (SegmentWords): its characters in a
// row, the gold word ends marked above, one head's predicted ends below.
// Pure: plain data in, a standalone SVG out, every text escaped.
#ifndef BERTOLOGY_CLIENT_RENDER_SEGMENTATION_FIGURE_H_
#define BERTOLOGY_CLIENT_RENDER_SEGMENTATION_FIGURE_H_

#include <string>
#include <vector>

namespace bertology::render {

struct SegmentationFigure {
  std::string title, subtitle;
  std::vector<std::string> characters;
  std::vector<int> segment;    // 0: text_a, 1: text_b (a gap between them)
  std::vector<bool> gold_end;  // the character ends a word
  // "end", "internal" or "none", one per character.
  std::vector<std::string> predicted;
};

// One <rect class="char"> per character (data-index, data-gold-end,
// data-predicted), one <line class="gold-boundary"> after each gold word end
// and one <line class="predicted-boundary"> after each predicted end
// (data-index: the character before it); a predicted end that is not gold
// is drawn red, a correct one green.
std::string SegmentationSvg(const SegmentationFigure& figure);

}  // namespace bertology::render

#endif  // BERTOLOGY_CLIENT_RENDER_SEGMENTATION_FIGURE_H_
