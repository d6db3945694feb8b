"""Importing this module registers every online policy with :mod:`mipopt.policies.online`."""

import mipopt.policies.adapter
import mipopt.policies.grmu_policies
import mipopt.policies.mfi_policies  # noqa: F401
