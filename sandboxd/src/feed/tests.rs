//! Readers at their own pace, the bounded buffer, the end.

use super::*;

fn data(read: Read) -> (u64, String) {
    match read {
        Read::Data { skipped, data } => (skipped, String::from_utf8(data).unwrap()),
        Read::Closed => panic!("closed"),
    }
}

#[tokio::test]
async fn readers_follow_at_their_own_pace_and_see_the_end() {
    let feed = Feed::new(1024);
    let mut early = feed.reader(0);
    assert_eq!(early.try_next(), None);
    feed.push(b"one\n");
    let mut late = feed.reader(feed.end());
    feed.push(b"two\n");
    assert_eq!(data(early.next().await), (0, "one\ntwo\n".into()));
    assert_eq!(data(late.next().await), (0, "two\n".into()));
    let waiting = tokio::spawn(async move { early.next().await });
    feed.push(b"three\n");
    assert_eq!(data(waiting.await.unwrap()), (0, "three\n".into()));
    feed.close();
    feed.push(b"after the end\n");
    assert_eq!(data(late.next().await), (0, "three\n".into()));
    assert_eq!(late.next().await, Read::Closed);
}

#[tokio::test]
async fn a_reader_that_fell_behind_learns_what_it_missed() {
    let feed = Feed::new(4);
    let mut reader = feed.reader(0);
    feed.push(b"abcdef");
    assert_eq!(data(reader.next().await), (2, "cdef".into()));
    feed.push(b"gh");
    let mut from_start = feed.reader(0);
    assert_eq!(data(from_start.next().await), (4, "efgh".into()));
}
