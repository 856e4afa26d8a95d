#include "server/core/model/head_mask_tensors.h"

#include <torch/torch.h>

#include <algorithm>
#include <set>

#include "server/core/model/device_copy.h"
#include "server/core/model/reference_tensors.h"

namespace bertology {
namespace {

// [B, H] -> [B, H, 1, 1].
torch::Tensor PerHead(const torch::Tensor& values) {
  return values.view({values.size(0), values.size(1), 1, 1});
}

// Row r's fill [T, L, H, d], position by position (positions past the
// row's length take position 0's: padding is never read).
torch::Tensor PositionalFill(const HeadMask& mask, const TokenLayout& layout,
                             int draw, int64_t t, const torch::Device& device) {
  const HeadReference& ref = *mask.reference();
  std::vector<int64_t> index(t, 0);
  const torch::Tensor* table = &ref.tensors->role_means;
  if (mask.mode() == AblationMode::kMeanByRole) {
    for (int p = 0; p < layout.length && p < t; ++p) {
      index[p] = static_cast<int64_t>(layout.RoleAt(p));
    }
  } else {
    const int source = ResampleSource(ref, layout, mask.draws(), draw);
    TORCH_CHECK(source >= 0, "no resample source for a row (unchecked)");
    const std::vector<int64_t> rows =
        ResampleTokenRows(ref, source, layout, mask.draws().alignment);
    for (int64_t p = 0; p < t; ++p) {
      index[p] = p < static_cast<int64_t>(rows.size()) ? rows[p] : rows[0];
    }
    table = &ref.tensors->token_outputs;
  }
  return table->index_select(
      0, ToDevice(torch::tensor(index, torch::kLong), device));
}

}  // namespace

// ---- The modes' formulas. ----
// The switch has no default, so the compiler names a mode left out.
std::vector<AblationFill> MakeAblationFills(
    const std::vector<AblationMode>& row_modes,
    const torch::Tensor& attention_mask) {
  std::vector<AblationFill> fills;
  // Each mode in use once, in enum order (a fixed order of additions).
  const std::set<AblationMode> modes(row_modes.begin(), row_modes.end());
  for (AblationMode mode : modes) {
    torch::Tensor target;
    switch (mode) {
      case AblationMode::kZero:  // p' = m * p: nothing moves in
        break;
      // p' = m * p, then the head's output moves towards the reference's
      // (LayerMask::output_fill, ApplyOutputFill): nothing here.
      case AblationMode::kMean:
      case AblationMode::kMeanByRole:
      case AblationMode::kResample:
        break;
      case AblationMode::kUniform:
        // Uniform over the row's real tokens (Kovaleva et al. 2019). Rows
        // with no real token would divide by 0; they attend nowhere.
        target = attention_mask /
                 attention_mask.sum(-1, /*keepdim=*/true).clamp_min(1);
        break;
    }
    if (!target.defined()) continue;
    std::vector<float> in_mode(row_modes.size(), 0.0f);
    for (size_t r = 0; r < row_modes.size(); ++r) {
      in_mode[r] = row_modes[r] == mode ? 1.0f : 0.0f;
    }
    const int64_t b = static_cast<int64_t>(row_modes.size());
    torch::Tensor rows = ToDevice(torch::tensor(in_mode, torch::kFloat)
                                      .to(attention_mask.scalar_type())
                                      .view({b, 1, 1, 1}),
                                  attention_mask.device());
    fills.push_back({mode, rows, target});
  }
  return fills;
}

torch::Tensor ApplyHeadMask(const torch::Tensor& probs, const LayerMask& mask,
                            const std::vector<AblationFill>& fills) {
  if (!mask.values.defined()) return probs;
  // A head whose value is 0 for every zero-mode row contributes nothing;
  // skipping its matmuls is a later optimisation.
  const torch::Tensor m = PerHead(mask.values);
  torch::Tensor out = probs * m;
  for (const AblationFill& fill : fills) {
    out = out + ((1 - m) * fill.target) * fill.rows;
  }
  return out;
}

torch::Tensor MaskFusedOutputs(const torch::Tensor& out, const torch::Tensor& v,
                               const LayerMask& mask,
                               const std::vector<AblationFill>& fills) {
  if (!mask.values.defined()) return out;
  const torch::Tensor m = PerHead(mask.values);
  torch::Tensor masked = out * m;
  for (const AblationFill& fill : fills) {
    // target [B, 1, 1, T] @ V [B, H, T, d] -> [B, H, 1, d]: what a head
    // attending as `target` outputs, the same for every query.
    masked = masked + ((1 - m) * torch::matmul(fill.target, v)) * fill.rows;
  }
  return masked;
}

torch::Tensor ApplyOutputFill(const torch::Tensor& out, const LayerMask& mask,
                              int64_t query_rows) {
  if (!mask.output_fill.defined()) return out;
  // Rows in modes without an output fill have a zero fill, so their output
  // is unchanged (x + 0 = x).
  const torch::Tensor m = PerHead(mask.values);
  const torch::Tensor fill = mask.positional_fill
                                 ? mask.output_fill.narrow(2, 0, query_rows)
                                 : mask.output_fill;
  return out + (1 - m) * fill;
}

torch::Tensor MaskHeadOutputs(const torch::Tensor& outputs,
                              const LayerMask& mask,
                              const std::vector<AblationFill>& fills,
                              const PackedTokens* packed, int heads,
                              int head_size) {
  TORCH_CHECK(!mask.patch_where.defined(),
              "a layer started from head outputs cannot be patched");
  if (!mask.values.defined()) return outputs;
  TORCH_CHECK(fills.empty(),
              "a layer started from head outputs cannot mask rows in mode "
              "uniform (their outputs need the values)");
  torch::Tensor m = mask.values;  // [B, H]
  // [B, H, d], or [B, T, H, d] for a positional fill.
  torch::Tensor fill;
  if (mask.output_fill.defined()) {
    fill = mask.positional_fill ? mask.output_fill.permute({0, 2, 1, 3})
                                : mask.output_fill.squeeze(2);
  }
  torch::Tensor o;  // outputs with heads split, m and fill broadcastable
  if (outputs.dim() == 2) {  // packed: [N, D], or [B, D] (first tokens)
    const int64_t n = outputs.size(0);
    const bool all_tokens = packed != nullptr && n == packed->tokens();
    if (all_tokens) m = packed->PerToken(m);
    if (fill.defined() && mask.positional_fill) {
      fill = all_tokens ? packed->Pack(fill) : fill.select(1, 0);
    } else if (fill.defined() && all_tokens) {
      fill = packed->PerToken(fill);
    }
    o = outputs.view({n, heads, head_size});
    m = m.unsqueeze(-1);  // [., H, 1]
  } else {                // [B, Q, D]
    o = outputs.view({outputs.size(0), outputs.size(1), heads, head_size});
    m = m.view({m.size(0), 1, m.size(1), 1});
    if (fill.defined()) {
      fill = mask.positional_fill ? fill.narrow(1, 0, outputs.size(1))
                                  : fill.unsqueeze(1);  // [B, 1, H, d]
    }
  }
  torch::Tensor out = o * m;
  if (fill.defined()) out = out + (1 - m) * fill;
  return out.view(outputs.sizes());
}

// ---- The masks as tensors. ----

LayerMask BatchHeadMask::ForLayer(int l) const {
  LayerMask mask;
  if (!masked_layers[l]) return mask;
  mask.values = values.select(1, l);  // [B, H]
  if (output_fill.defined()) {
    // [B, H, 1, d], or [B, H, T, d] per position.
    mask.output_fill = output_fill.select(1, l);
    mask.positional_fill = positional_fill;
  }
  return mask;
}

BatchHeadMask MakeBatchHeadMask(const std::vector<const HeadMask*>& masks,
                                const RowPositions* positions,
                                const MaskShape& shape,
                                const torch::Device& device,
                                torch::ScalarType dtype) {
  const int64_t rows = shape.rows, t = shape.positions;
  const int layers = shape.layers, heads = shape.heads;
  BatchHeadMask out;
  out.masked_layers.assign(layers, false);
  out.row_modes.assign(rows, AblationMode::kZero);
  bool any = false, any_fill = false;
  for (const HeadMask* m : masks) {
    if (m == nullptr) continue;
    TORCH_CHECK(m->layers() == layers && m->heads() == heads,
                "head mask of shape ", m->layers(), "x", m->heads(),
                " for a model of ", layers, "x", heads);
    const std::vector<LayerHead> affected = m->AffectedHeads();
    for (const LayerHead& lh : affected) {
      out.masked_layers[lh.layer] = any = true;
    }
    if (ModeNeedsReference(m->mode()) && !affected.empty()) {
      TORCH_CHECK(
          m->reference() != nullptr && m->reference()->tensors != nullptr,
          "a head mask in mode ", AblationModeName(m->mode()),
          " without reference statistics");
      any_fill = true;
      if (ModeFillsByPosition(m->mode())) {
        TORCH_CHECK(positions != nullptr &&
                        static_cast<int64_t>(positions->layouts.size()) == rows,
                    "a head mask in mode ", AblationModeName(m->mode()),
                    " without the rows' token layouts");
        out.positional_fill = true;
      }
    }
  }
  if (!any) return out;  // no mask at all: the probabilities stay untouched
  torch::Tensor values = torch::ones({rows, layers, heads}, torch::kFloat);
  float* v = values.data_ptr<float>();
  std::vector<torch::Tensor> fills;
  torch::Tensor zeros;
  if (any_fill) {
    zeros = torch::zeros({layers, heads, shape.head_size},
                         torch::TensorOptions().dtype(dtype).device(device));
    if (out.positional_fill) zeros = zeros.unsqueeze(0).expand({t, -1, -1, -1});
  }
  for (int64_t r = 0; r < rows; ++r) {
    const HeadMask* m = masks[r];
    if (m != nullptr) {
      std::copy(m->values().begin(), m->values().end(), v + r * layers * heads);
      out.row_modes[r] = m->mode();
    }
    if (!any_fill) continue;
    if (m == nullptr || !ModeNeedsReference(m->mode()) || m->IsIdentity()) {
      fills.push_back(zeros);
    } else if (ModeFillsByPosition(m->mode())) {
      const int draw = positions->draws.empty() ? 0 : positions->draws.at(r);
      fills.push_back(
          PositionalFill(*m, positions->layouts[r], draw, t, device));
    } else if (out.positional_fill) {
      fills.push_back(
          m->reference()->tensors->mean.unsqueeze(0).expand({t, -1, -1, -1}));
    } else {
      fills.push_back(m->reference()->tensors->mean);
    }
  }
  out.values = ToDevice(values.to(dtype), device);
  if (any_fill) {
    // [B, L, H, d] -> [B, L, H, 1, d]; [B, T, L, H, d] -> [B, L, H, T, d].
    out.output_fill = out.positional_fill
                          ? torch::stack(fills).permute({0, 2, 3, 1, 4})
                          : torch::stack(fills).unsqueeze(3);
  }
  return out;
}

BatchHeadMask TensorHeadMask(const torch::Tensor& mask_tensor,
                             AblationMode mode, const torch::Tensor& mean,
                             const MaskShape& shape, torch::ScalarType dtype) {
  const int64_t rows = shape.rows;
  const int layers = shape.layers, heads = shape.heads;
  TORCH_CHECK(mask_tensor.is_floating_point(), "mask_tensor must be float");
  TORCH_CHECK(!ModeFillsByPosition(mode), "mask_tensor in mode ",
              AblationModeName(mode), " (no tensor form)");
  TORCH_CHECK(
      mode != AblationMode::kMean ||
          (mean.defined() && mean.dim() == 3 && mean.size(0) == layers &&
           mean.size(1) == heads && mean.size(2) == shape.head_size),
      "mask_tensor in mode mean needs a [L, H, d] mean");
  torch::Tensor values = mask_tensor;
  if (values.dim() == 2) values = values.unsqueeze(0).expand({rows, -1, -1});
  TORCH_CHECK(values.dim() == 3 && values.size(0) == rows &&
                  values.size(1) == layers && values.size(2) == heads,
              "mask_tensor of shape ", mask_tensor.sizes(), " for ", rows,
              " rows of a model of ", layers, "x", heads);
  BatchHeadMask out;
  out.values = values.to(dtype);  // differentiable
  out.masked_layers.assign(layers, true);
  out.row_modes.assign(rows, mode);
  if (mode == AblationMode::kMean) {
    out.output_fill = mean.to(mask_tensor.device(), dtype)
                          .unsqueeze(2)
                          .unsqueeze(0)
                          .expand({rows, -1, -1, -1, -1});  // [B, L, H, 1, d]
  }
  return out;
}

}  // namespace bertology
