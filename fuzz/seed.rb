# frozen_string_literal: true

# Builds the seed corpus of fuzz/fuzz_sse.c from the recorded Server-Sent Events
# streams: each stream with LF, CRLF and CR line endings, under a few slicings.
#
#   ruby fuzz/seed.rb [fixtures_dir] [corpus_dir]

require "digest"
require "fileutils"
require "json"

root = File.expand_path("..", __dir__)
fixtures = ARGV[0] || File.join(root, "spec/fixtures/recorded")
corpus = ARGV[1] || File.join(root, "tmp/fuzz/corpus_sse")
FileUtils.mkdir_p(corpus)

# Header bytes of an input: [count of slice lengths, stop-at event, *lengths].
SLICINGS = [
  [0, 0],            # one byte at a time
  [1, 0, 7],
  [3, 0, 1, 0, 64],  # an empty slice in the cycle
  [2, 3, 13, 255],   # the third event's callback stops the parser
].freeze

MAX_STREAM = 8192 # libFuzzer runs at -max_len 8192; longer streams are cut

def event_stream?(headers)
  (headers || {}).any? { |k, v| k.to_s.casecmp?("content-type") && v.to_s.include?("text/event-stream") }
end

streams = Dir[File.join(fixtures, "*.json")].sort.flat_map do |path|
  JSON.parse(File.read(path)).fetch("interactions", []).filter_map do |it|
    response = it["response"] || {}
    body = response["body"]
    body.b if body.is_a?(String) && event_stream?(response["headers"])
  end
end
abort "fuzz/seed.rb: no event streams under #{fixtures}" if streams.empty?

# Gemini frames its events with CRLF CRLF.
streams << "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"}]}}]}\r\n\r\n".b

written = 0
streams.uniq.each do |stream|
  stream = stream.byteslice(0, MAX_STREAM)
  [stream, stream.gsub("\n", "\r\n"), stream.gsub("\n", "\r")].each do |variant|
    SLICINGS.each do |header|
      input = header.pack("C*") + variant
      name = Digest::SHA1.hexdigest(input)
      File.binwrite(File.join(corpus, name), input)
      written += 1
    end
  end
end
puts "fuzz/seed.rb: #{written} seeds from #{streams.size} streams in #{corpus}"
