"""Per-candidate-tuple memos: remembered by identity, never for a mutable list, bounded."""

from kselect.kernels.candidate import Candidate
from kselect.selector.decide.cache import candidate_set_digest
from kselect.selector.decide.candidate_sets import backends_of, candidate_keys
from kselect.selector.identity_memo import IdentityMemo


def test_tuples_are_remembered_by_identity_lists_never():
    calls = []
    memo = IdentityMemo(lambda seq: calls.append(1) or sum(seq), size=2)
    t = (1, 2, 3)
    assert memo(t) == memo(t) == 6 and len(calls) == 1
    assert memo(tuple([1, 2, 3])) == 6 and len(calls) == 2  # an equal tuple that is another object
    lst = [1, 2, 3]
    assert memo(lst) == 6
    lst.append(4)  # a list may change after a call: never remembered
    assert memo(lst) == 10 and len(calls) == 4


def test_bounded_and_an_evicted_identity_is_recomputed():
    calls = []
    memo = IdentityMemo(lambda seq: calls.append(seq) or len(seq), size=2)
    a, b, c = tuple([1]), tuple([1, 2]), tuple([1, 2, 3])
    memo(a), memo(b), memo(c)  # the third forgets the others
    assert len(memo._entries) <= 2
    memo(a)
    assert calls.count(a) == 2


def test_keys_digest_and_backends_of_a_tuple_equal_a_lists():
    cands = tuple([Candidate.make("aten", "mm")] + [Candidate.make("triton", "mm", BLOCK_M=m) for m in (16, 32)])
    keys = candidate_keys(cands)
    assert keys is candidate_keys(cands) and list(keys) == [c.key for c in cands]
    assert candidate_set_digest(keys) == candidate_set_digest(list(keys)) == candidate_set_digest(iter(keys))
    assert backends_of(cands) == backends_of(list(cands)) == {"aten", "triton"}


def test_of_parts_is_remembered_by_each_parts_identity():
    calls = []
    memo = IdentityMemo(lambda parts: calls.append(1) or sum(len(p) for p in parts))
    a, b = tuple([1, 2]), tuple([3])
    assert memo.of_parts((a, b)) == memo.of_parts((a, b)) == 3 and len(calls) == 1  # fresh outer tuples
    assert memo.of_parts((a, tuple([3]))) == 3 and len(calls) == 2  # an equal part that is another object
