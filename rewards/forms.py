"""Forms for the expert pages; validation reuses the model's ``clean()`` and the spec checker.

A behaviour or reward-model input that passes its form also passes compile-time validation,
because both forms run the same ``validate_spec`` that ``reward_model_compile`` runs.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.forms.models import model_to_dict

from core.jsonlimits import loads_bounded
from rewards.models import LearnedComponent, RewardModel, TaskType, TrustedBehaviour
from rewards.scoring import SpecError, validate_spec


class LinesField(forms.CharField):
    """A list of strings edited as one item per line (blank lines ignored)."""

    widget = forms.Textarea(attrs={"rows": 4, "spellcheck": "false"})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return value
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class JSONTextField(forms.JSONField):
    """JSON in a monospace textarea; a parse error names its line and column."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Any:
        if self.disabled or not isinstance(value, str):
            return super().to_python(value)
        if value.strip() in self.empty_values:
            return None
        try:
            return loads_bounded(value)
        except json.JSONDecodeError as exc:
            raise ValidationError(
                f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                code="invalid",
            ) from exc
        except ValueError as exc:  # nested too deeply
            raise ValidationError(str(exc), code="invalid") from exc

    def bound_data(self, data: Any, initial: Any) -> Any:
        """As Django's, through ``loads_bounded``: Django's own ``json.loads`` here let the
        ValueError of an integer of thousands of digits escape (a 500 re-rendering the form)."""
        if self.disabled:
            return initial
        if data is None:
            return None
        try:
            return loads_bounded(data)
        except ValueError:
            return forms.fields.InvalidJSONInput(data)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        if value is None:
            return ""
        return json.dumps(value, indent=2, ensure_ascii=False)


class TaskTypeForm(forms.ModelForm):
    """Create or edit a task type; ``TaskType.clean()`` runs through ``full_clean``."""

    shell_tools = LinesField(help_text="Tool names whose calls are shell actions, one per line.")
    command_keys = LinesField(help_text="Argument keys holding the command, one per line.")
    workspace_roots = LinesField(help_text="Absolute paths, one per line.")
    test_path_patterns = LinesField(help_text="Glob patterns for test files, one per line.")

    class Meta:
        model = TaskType
        fields = [
            "slug",
            "name",
            "description",
            "outcome_mode",
            "score_key",
            "score_min",
            "score_max",
            "shell_tools",
            "command_keys",
            "workspace_roots",
            "test_path_patterns",
            "tool_call_format",
            "policy",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            # A new task type's form shows the model's defaults (shell tools, command keys,
            # workspace roots, test paths): Django fills initial values only from a saved row.
            defaults = model_to_dict(self.instance, fields=self._meta.fields)
            self.initial = {**defaults, **self.initial}


def _add_errors(form: forms.Form, errors: dict[str, list[str]]) -> None:
    for field, messages in errors.items():
        for message in messages:
            form.add_error(
                None if field == "__all__" or field not in form.fields else field, message
            )


class BehaviourForm(forms.ModelForm):
    """Add or edit a behaviour of one task type; the detector is JSON, checked like at compile."""

    detector = JSONTextField(
        required=False,
        help_text='e.g. {"kind": "ran_tests_after_last_edit"}; empty: labelled by experts only.',
    )

    class Meta:
        model = TrustedBehaviour
        fields = ["slug", "name", "description", "polarity", "weight", "max_steps", "detector"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, task_type: TaskType, **kwargs: Any) -> None:
        # Many behaviour forms share a page: distinct ids keep labels pointing at their inputs.
        instance = kwargs.get("instance")
        kwargs.setdefault("auto_id", f"id_b{instance.pk if instance else 'new'}_%s")
        super().__init__(*args, **kwargs)
        self.instance.task_type = task_type

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        slug = data.get("slug")
        if slug and (
            TrustedBehaviour.objects.filter(task_type=self.instance.task_type, slug=slug)
            .exclude(pk=self.instance.pk)
            .exists()
        ):
            self.add_error("slug", "This task type already has a behaviour with this slug.")
        if self.errors:
            return data
        from rewards.services.rewards import behaviour_errors

        _add_errors(self, behaviour_errors(data))
        return data


class NewRewardModelForm(forms.ModelForm):
    """A reward model for a task type: a name and the outcome weight; its other inputs start at
    the defaults and are set on its page before the first compile."""

    task_type = forms.ModelChoiceField(
        queryset=TaskType.objects.order_by("slug"),
        to_field_name="slug",
        help_text="Whose outcome, behaviours and safety policy the reward reads.",
    )

    class Meta:
        model = RewardModel
        fields = ["slug", "name", "task_type", "description", "outcome_weight"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "slug": "How trainers name it in score requests (letters, digits, - and _).",
            "outcome_weight": "Weight of the environment's outcome in the reward (default 1).",
        }


class RewardModelForm(forms.ModelForm):
    """The inputs of a reward model, validated by compiling them into a spec (not stored)."""

    severity_penalties = JSONTextField(
        required=False, help_text='Overrides per severity, e.g. {"high": -0.3}; empty: defaults.'
    )
    gates = JSONTextField(
        required=False, help_text='e.g. {"blocking_finding": {"cap": 0}}; empty: defaults.'
    )
    process_bounds = JSONTextField(
        required=False, help_text="step_min, step_max, total_min, total_max; empty: defaults."
    )
    # Not required: a post without them keeps the stored choice (older clients of the page).
    learned_weight = forms.FloatField(
        required=False,
        help_text="Weight of the learned step classifier, 0 (off) to 1; needs a trained "
        "component for the task type.",
    )
    learned_component = forms.ModelChoiceField(
        queryset=LearnedComponent.objects.none(),
        required=False,
        empty_label="the task type's newest",
        to_field_name="digest",
        help_text="The learned component to compile in.",
    )

    class Meta:
        model = RewardModel
        fields = [
            "name",
            "description",
            "outcome_weight",
            "severity_penalties",
            "confirmed_multiplier",
            "learned_weight",
            "learned_component",
            "gates",
            "process_bounds",
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["learned_component"]
        field.queryset = LearnedComponent.objects.filter(  # type: ignore[attr-defined]
            task_type_id=self.instance.task_type_id
        ).order_by("-created_at", "-id")
        field.label_from_instance = (
            lambda c: (  # type: ignore[attr-defined]
                f"{c.digest[:19]}… · {c.created_at:%Y-%m-%d %H:%M} · AUC "
                + (f"{c.metrics['auc']:.3f}" if isinstance(c.metrics.get("auc"), float) else "n/a")
            )
        )

    def clean_learned_weight(self) -> float:
        value = self.cleaned_data.get("learned_weight")
        return self.instance.learned_weight if value is None else value

    def clean_learned_component(self) -> LearnedComponent | None:
        if "learned_component" not in self.data:
            return self.instance.learned_component
        return self.cleaned_data.get("learned_component")

    def _object(self, name: str) -> dict[str, Any]:
        value = self.cleaned_data.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValidationError("must be a JSON object")
        return value

    def clean_severity_penalties(self) -> dict[str, Any]:
        return self._object("severity_penalties")

    def clean_gates(self) -> dict[str, Any]:
        return self._object("gates")

    def clean_process_bounds(self) -> dict[str, Any]:
        return self._object("process_bounds")

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors:
            return
        from rewards.services.rewards import reward_model_spec, spec_field_errors

        spec, _ = reward_model_spec(self.instance)
        try:
            validate_spec(spec, check_policy=False)
        except SpecError as exc:
            mapping = {
                "safety.penalties": "severity_penalties",
                "safety.confirmed_multiplier": "confirmed_multiplier",
                "gates": "gates",
                "process": "process_bounds",
                "outcome_weight": "outcome_weight",
            }
            _add_errors(self, spec_field_errors(exc, mapping))


class TrainForm(forms.Form):
    """Start training a task type's learned step classifier (the seed fixes split and init)."""

    seed = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1, initial=0)


class CompileForm(forms.Form):
    note = forms.CharField(max_length=300, required=False)
    activate = forms.BooleanField(required=False)


class ScoreForm(forms.Form):
    """A reward model reference and either a pasted C1 trajectory or a stored trajectory id."""

    reward_model = forms.CharField(
        max_length=200,
        validators=[
            RegexValidator(
                r"^[A-Za-z0-9_-]+(@[0-9]{1,9})?$", "Expected a reward model slug or slug@N."
            )
        ],
    )
    trajectory = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
    )
    trajectory_id = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        text = (data.get("trajectory") or "").strip()
        stored = data.get("trajectory_id")
        if text and stored:
            raise ValidationError("Paste a trajectory or give a stored id, not both.")
        if not text and not stored and "trajectory_id" not in self.errors:
            raise ValidationError("Paste a C1 trajectory as JSON or give a stored trajectory id.")
        if text:
            try:
                data["parsed"] = loads_bounded(text)
            except json.JSONDecodeError as exc:
                self.add_error(
                    "trajectory",
                    f"Invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                )
            except ValueError as exc:  # nested too deeply
                self.add_error("trajectory", str(exc))
        return data


class EvaluationSetForm(forms.Form):
    """A new evaluation set from the browser; ``held_out`` is offered to experts and admins only
    (the service refuses it from anyone else, as the API does)."""

    slug = forms.SlugField(max_length=100)
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    held_out = forms.BooleanField(
        required=False, help_text="Hidden from policy editors: only experts and admins see it."
    )


class EvaluationImportForm(forms.Form):
    """JSONL pasted or uploaded: one case per line, a new version of the set."""

    MAX_BYTES = 20_000_000

    jsonl = forms.CharField(
        required=False,
        strip=False,
        label="JSONL",
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
    )
    file = forms.FileField(required=False, label="or a .jsonl file")
    replace = forms.BooleanField(
        required=False, help_text="Replace the cases instead of adding to the newest version."
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload is not None:
            if upload.size > self.MAX_BYTES:
                raise ValidationError({"file": f"larger than {self.MAX_BYTES} bytes"})
            try:
                data["jsonl"] = upload.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError({"file": "not UTF-8 text"}) from exc
        if not (data.get("jsonl") or "").strip():
            raise ValidationError({"jsonl": "paste JSONL or choose a file"})
        return data
