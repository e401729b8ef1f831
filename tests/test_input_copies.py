"""The module path hands the student a copy of x on every forward call where gradlab
reuses x afterwards (the gradient check's perturbed point and twin, the reference
check's reference input): a forward that edits x in place is input_mutation's
finding, and the other checks judge what the module computes, not the edit."""
import pytest

IN_PLACE = [("positional", "input_mutation_bad_positional_inplace.py"),
            ("block", "red_mod_block_inplace_residual.py"),
            ("layernorm", "input_mutation_bad_layernorm_inplace.py")]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind, name", IN_PLACE, ids=[n[:-3] for _, n in IN_PLACE])
def test_an_in_place_forward_is_named_by_input_mutation_only(run, zoo, kind, name, dtype):
    """Before the copies, the positional file failed `reference` ('forward output differs', the
    reference having been given the edited x) and the block failed `gradient` with 'the objective is
    not smooth' (each numerical forward moved the point again)."""
    result = run(kind, zoo(name), ["gradient", "reference", "input_mutation"], dtype=dtype)
    assert result["gradient"].status == "pass", result["gradient"].message
    assert result["reference"].status == "pass", result["reference"].message
    mutation = result["input_mutation"]
    assert mutation.status == "fail" and "changed the caller's x" in mutation.message, mutation.message
