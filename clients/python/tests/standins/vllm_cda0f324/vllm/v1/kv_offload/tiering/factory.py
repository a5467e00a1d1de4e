"""Stand-in for vLLM's vllm/v1/kv_offload/tiering/factory.py of the time of tiering/base.py at cda0f324: tiers by
registered type or, out of tree, by module_path, built with the factory's call shape (written for these tests, not
vLLM's code)."""

import importlib
from typing import Any, Callable, Dict

from vllm.v1.kv_offload.tiering.backpressure import BackpressureDetector
from vllm.v1.kv_offload.tiering.base import SecondaryTierManager


class SecondaryTierFactory:
    _registry: Dict[str, Callable[[], type]] = {}

    @classmethod
    def register_tier(cls, tier_type: str, module_path: str, class_name: str) -> None:
        if tier_type in cls._registry:
            raise ValueError(f"Tier '{tier_type}' is already registered.")
        cls._registry[tier_type] = lambda: getattr(importlib.import_module(module_path), class_name)

    @classmethod
    def get_tier_class(cls, tier_config: dict) -> type:
        tier_type = tier_config.get("type")
        if not tier_type:
            raise ValueError("Secondary tier configuration must include 'type'")
        if tier_type in cls._registry:
            return cls._registry[tier_type]()
        module_path = tier_config.get("module_path")
        if module_path is None:
            raise ValueError(f"Unknown secondary tier type: {tier_type!r}; for an out-of-tree tier, also set 'module_path'")
        tier_cls = getattr(importlib.import_module(module_path), tier_type)
        assert issubclass(tier_cls, SecondaryTierManager)
        return tier_cls

    @classmethod
    def create_secondary_tier(cls, tier_config: dict, primary_kv_view: memoryview, offloading_spec: Any) -> SecondaryTierManager:
        tier_cls = cls.get_tier_class(tier_config)
        config = dict(tier_config)
        tier_type = config.pop("type")
        config.pop("module_path", None)
        settings = config.pop("backpressure", None)
        detector = BackpressureDetector(**settings) if settings is not None else None
        return tier_cls(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view, tier_type=tier_type,
                        backpressure_detector=detector, **config)
