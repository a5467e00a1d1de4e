"""Host memory pools laid out as SGLang's are (python/sglang/srt/mem_cache/pool_host/ at 001067ff: mha.py, mla.py,
mamba.py), in CPU torch tensors, with the zero-copy metadata a storage backend reads them through
(get_page_buffer_meta, get_split_heads_page_buffer_meta). Written for these tests from SGLang's layouts; every pool
starts filled with its own random bytes."""

from __future__ import annotations

from typing import List, Sequence

import torch


def _fill(tensor: torch.Tensor, seed: int) -> torch.Tensor:
    raw = tensor.view(torch.uint8) if tensor.dtype == torch.uint8 else tensor.view(torch.int16 if tensor.element_size() == 2 else torch.int32)
    info = torch.iinfo(raw.dtype)
    raw.copy_(torch.randint(info.min, info.max, raw.shape, dtype=torch.int64, generator=torch.Generator().manual_seed(seed)))
    return tensor


_BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors hold the same bits (random bit patterns include NaNs, which equal nothing)."""
    return a.shape == b.shape and torch.equal(a.view(_BITS[a.element_size()]), b.view(_BITS[b.element_size()]))


def token_indices(pages: Sequence[int], page_size: int) -> torch.Tensor:
    """The host indices of whole pages, as SGLang hands them to a backend: every token slot of each page."""
    return torch.cat([torch.arange(p * page_size, (p + 1) * page_size) for p in pages]).to(torch.int64)


class MHATokenToKVPoolHost:
    """An MHA host KV pool: K and V of ``head_num`` heads (this TP rank's) per layer per token, in one of SGLang's
    layouts."""

    LAYOUTS = ("layer_first", "page_first", "page_first_direct", "page_head")

    def __init__(self, layout: str, page_num: int, page_size: int, layer_num: int, head_num: int, head_dim: int, seed: int):
        assert layout in self.LAYOUTS
        self.layout, self.page_num, self.page_size = layout, page_num, page_size
        self.layer_num, self.head_num, self.head_dim = layer_num, head_num, head_dim
        self.size = page_num * page_size
        self.dtype = torch.bfloat16
        dims = {"layer_first": (2, layer_num, self.size, head_num, head_dim),
                "page_first": (2, self.size, layer_num, head_num, head_dim),
                "page_first_direct": (2, page_num, layer_num, page_size, head_num, head_dim),
                "page_head": (2, page_num, head_num, page_size, layer_num, head_dim)}[layout]
        self.kv_buffer = _fill(torch.empty(dims, dtype=self.dtype), seed)
        self.item = self.kv_buffer.element_size()

    def _v_offset(self) -> int:
        return self.layer_num * self.size * self.head_num * self.head_dim * self.item

    def get_page_buffer_meta(self, indices: torch.Tensor):
        assert len(indices) % self.page_size == 0
        base, v_offset, firsts = self.kv_buffer.data_ptr(), self._v_offset(), indices.tolist()[::self.page_size]
        token = self.head_num * self.head_dim * self.item
        pointers: List[int] = []
        if self.layout == "layer_first":
            for first in firsts:
                for layer in range(self.layer_num):
                    k = base + first * token + layer * self.size * token
                    pointers += [k, k + v_offset]
            size = self.page_size * token
        else:
            for first in firsts:
                k = base + first * self.layer_num * token
                pointers += [k, k + v_offset]
            size = self.layer_num * self.page_size * token
        return pointers, [size] * len(pointers)

    def get_split_heads_page_buffer_meta(self, indices: torch.Tensor, split_factor: int):
        """K and V of each group of head_num / split_factor heads, group after group, page after page (page_head)."""
        assert self.layout == "page_head" and self.head_num % split_factor == 0
        base, v_offset = self.kv_buffer.data_ptr(), self._v_offset()
        per_head = self.page_size * self.layer_num * self.head_dim * self.item
        pointers: List[int] = []
        for first in indices.tolist()[::self.page_size]:
            for head in range(0, self.head_num, self.head_num // split_factor):
                k = base + first * self.layer_num * self.head_num * self.head_dim * self.item + head * per_head
                pointers += [k, k + v_offset]
        return pointers, [per_head * self.head_num // split_factor] * len(pointers)

    def page(self, index: int) -> torch.Tensor:
        """Page ``index``'s K and V (a view)."""
        tokens = slice(index * self.page_size, (index + 1) * self.page_size)
        if self.layout == "layer_first":
            return self.kv_buffer[:, :, tokens]
        if self.layout == "page_first":
            return self.kv_buffer[:, tokens]
        return self.kv_buffer[:, index]

    def head(self, index: int, head: int) -> torch.Tensor:
        """K and V of one head of page ``index``, as (2, page_size, layers, head_dim), whatever the layout."""
        page = self.page(index)
        if self.layout == "page_head":
            return page[:, head]
        if self.layout == "page_first_direct":
            return page[:, :, :, head].transpose(1, 2)
        if self.layout == "page_first":
            return page[:, :, :, head]
        return page[:, :, :, head].transpose(1, 2)


class MLATokenToKVPoolHost:
    """An MLA host KV pool: one latent vector per layer per token, the same on every TP rank."""

    LAYOUTS = ("layer_first", "page_first", "page_first_direct")

    def __init__(self, layout: str, page_num: int, page_size: int, layer_num: int, kv_cache_dim: int, seed: int):
        assert layout in self.LAYOUTS
        self.layout, self.page_num, self.page_size, self.layer_num, self.kv_cache_dim = layout, page_num, page_size, layer_num, kv_cache_dim
        self.size = page_num * page_size
        dims = {"layer_first": (layer_num, self.size, 1, kv_cache_dim),
                "page_first": (self.size, layer_num, 1, kv_cache_dim),
                "page_first_direct": (page_num, layer_num, page_size, 1, kv_cache_dim)}[layout]
        self.kv_buffer = _fill(torch.empty(dims, dtype=torch.bfloat16), seed)
        self.item = self.kv_buffer.element_size()

    def get_page_buffer_meta(self, indices: torch.Tensor):
        assert len(indices) % self.page_size == 0
        base, token = self.kv_buffer.data_ptr(), self.kv_cache_dim * self.item
        pointers: List[int] = []
        if self.layout == "layer_first":
            for first in indices.tolist()[::self.page_size]:
                pointers += [base + first * token + layer * self.size * token for layer in range(self.layer_num)]
            size = self.page_size * token
        else:
            pointers = [base + first * self.layer_num * token for first in indices.tolist()[::self.page_size]]
            size = self.layer_num * self.page_size * token
        return pointers, [size] * len(pointers)

    def page(self, index: int) -> torch.Tensor:
        tokens = slice(index * self.page_size, (index + 1) * self.page_size)
        if self.layout == "layer_first":
            return self.kv_buffer[:, tokens]
        if self.layout == "page_first":
            return self.kv_buffer[tokens]
        return self.kv_buffer[index]


class LogicalAnchorPool:
    """A KV anchor that only allocates indices (DeepSeek-V4's): no bytes of its own."""

    layout = "page_first"

    def __init__(self, page_size: int):
        self.page_size = page_size
        self.kv_buffer = None


class MambaPoolHost:
    """A Mamba state host pool (page_first): page size 1, one temporal state and N conv states per slot, each with
    its own shape and dtype, all layers of a slot side by side."""

    def __init__(self, size: int, layer_num: int, temporal_shape: Sequence[int], conv_shapes: Sequence[Sequence[int]], seed: int):
        self.page_size, self.size, self.layout, self.num_mamba_layers = 1, size, "page_first", layer_num
        self.temporal_buffer = _fill(torch.empty((size, layer_num, 1, *temporal_shape), dtype=torch.float32), seed)
        self.conv_buffer = [_fill(torch.empty((size, layer_num, 1, *shape), dtype=torch.bfloat16), seed + 1 + i)
                            for i, shape in enumerate(conv_shapes)]
        self.kv_buffer = [self.temporal_buffer, *self.conv_buffer]

    def get_page_buffer_meta(self, indices: torch.Tensor):
        pointers: List[int] = []
        sizes: List[int] = []
        for index in indices.tolist():
            for buffer in self.kv_buffer:
                slot = buffer[0].numel() * buffer.element_size()
                pointers.append(buffer.data_ptr() + index * slot)
                sizes.append(slot)
        return pointers, sizes

    def page(self, index: int) -> List[torch.Tensor]:
        return [buffer[index] for buffer in self.kv_buffer]
