# frozen_string_literal: true

# Seeds fuzz/fuzz_jscan.c: the data of every recorded OpenAI-compatible stream's
# events, each stream as one input (events separated by 0x1E), each event alone,
# every recorded plain answer body (OpenAI and Anthropic), and a few shapes the
# recordings lack.
#
#   ruby fuzz/seed_jscan.rb [fixtures_dir] [corpus_dir]

require "digest"
require "fileutils"
require "json"

root = File.expand_path("..", __dir__)
fixtures = ARGV[0] || File.join(root, "spec/fixtures/recorded")
corpus = ARGV[1] || File.join(root, "tmp/fuzz/corpus_jscan")
FileUtils.mkdir_p(corpus)

SEP = "\x1E"
MAX = 8192
inputs = []

Dir[File.join(fixtures, "*.json")].sort.each do |path|
  JSON.parse(File.read(path)).fetch("interactions", []).each do |it|
    response = it["response"] || {}
    next unless response["body"].is_a?(String)

    type = (response["headers"] || {}).find { |k, _| k.casecmp?("content-type") }&.last.to_s
    unless type.include?("event-stream")
      inputs << response["body"].b
      next
    end
    next unless it.dig("request", "api") == "openai"

    events = response["body"].b.split(/\r?\n\r?\n/).map do |block|
      block.lines.grep(/\Adata:/).map { |l| l.sub(/\Adata: ?/, "").chomp }.join("\n")
    end.reject(&:empty?)
    events.each { |e| inputs << e }
    inputs << events.join(SEP)
  end
end
abort "fuzz/seed_jscan.rb: no recorded traffic under #{fixtures}" if inputs.empty?

inputs += [
  %({"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a\\n\\"q\\""}}]}),
  %({"choices":[{"delta":{"content":"x","content":"y"}}],"model":"m","model":"n"}),
  %({"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}),
  %({"error":{"message":"overloaded","type":"overloaded_error"}}),
  %({"choices":[{"delta":{"content":"\\u00e9 caf\xC3\xA9 \xFF"}}],"created":1e3}),
  %([DONE]),
  %({"id":"chatcmpl-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \\"x\\"",) +
    %("refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":12}}),
  %({"id":"msg_1","type":"message","model":"c","content":[{"type":"text","text":"a"},{"type":"tool_use",) +
    %("input":{}},{"type":"text","text":"b\\n"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}),
  %({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
]

inputs.uniq.each do |input|
  input = input.byteslice(0, MAX)
  File.binwrite(File.join(corpus, Digest::SHA1.hexdigest(input)), input)
end
puts "fuzz/seed_jscan.rb: #{inputs.uniq.size} seeds in #{corpus}"
