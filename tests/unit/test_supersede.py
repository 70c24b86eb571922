"""A newer conclusion on the same subject supersedes the older one."""

from briefroom.agents.searcher import previous_on_subject, subject_key
from briefroom.protocol.bus import Bus, Subscription
from briefroom.protocol.messages import MsgType, make_message
from briefroom.protocol.payloads import Conclusion


def conclusion(seq, content, subject, supersedes=None):
    return make_message(sender="searcher", msg_type=MsgType.CONCLUSION, content=content, round=1, seq=seq,
                        payload=Conclusion(subject=subject_key(subject)), supersedes=supersedes)


def test_subject_key_ignores_order_case_and_filler():
    assert subject_key("The 2026 cloud market size") == subject_key("market size of the Cloud")


def test_latest_on_a_subject_is_found_and_the_chain_continues():
    first = conclusion(0, "Market is 680 billion USD.", "cloud market size")
    other = conclusion(1, "Azure grew 31%.", "Azure growth")
    assert previous_on_subject([first, other], subject_key("Cloud market size")) is first
    second = conclusion(2, "Market is 723 billion USD.", "cloud market size", supersedes=first.msg_id)
    assert previous_on_subject([first, other, second], subject_key("cloud market size")) is second
    assert previous_on_subject([first], "") is None


def test_writer_never_sees_both_versions():
    bus = Bus({"writer": [Subscription(msg_type=MsgType.CONCLUSION)], "searcher": []}, {})
    first = conclusion(0, "Market is 680 billion USD.", "cloud market size")
    second = conclusion(1, "Market is 723 billion USD.", "cloud market size", supersedes=first.msg_id)
    inbox = bus.inbox("writer", [first, second])
    assert [m.body.content for m in inbox] == ["Market is 723 billion USD."]
