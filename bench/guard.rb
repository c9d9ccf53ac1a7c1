# frozen_string_literal: true

# Instructions per chat.ask beside the libcurl floor's, and per streamed chunk, counted by
# callgrind (bench/icount.sh) against the bench's nginx. A record that prints figures, not
# a target: nothing is tuned to it and nothing passes or fails on it (issue 22 retired the
# guard). `bundle exec ruby bench/guard.rb` (needs `bin/setup --bench`); takes a few
# minutes under valgrind.

require "rbconfig"
require_relative "run"

module Bench
  module Guard
    module_function

    ICOUNT = File.join(__dir__, "icount.sh")

    def icount(n1, n2, *cmd)
      out = Bench.sh!("nice", ICOUNT, n1.to_s, n2.to_s, *cmd)
      Integer(out[/instructions per call: (\d+)/, 1])
    end

    def run
      floor = Bench.build_c("curl_floor")
      body_file = File.join(TMP, "request.json")
      File.write(body_file, JSON.generate(model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello" }]))
      peer = Peer.new(dir: File.join(TMP, "peer")).start
      begin
        fast = peer.base_url(:fast)
        floor_n = icount(200, 1200, floor, "#{fast}/chat/completions", "{N}", body_file)
        # clients.rb warms up with n/10 more calls: (1.1 * 1200 - 1.1 * 200) calls counted.
        ask = (icount(200, 1200, RbConfig.ruby, CLIENTS, "gem", "{N}", fast) / 1.1).round
        # gem_stream warms up with 2 calls of 5000 events each; N1/N2 calls differ by 2.
        chunk = icount(1, 3, RbConfig.ruby, CLIENTS, "gem_stream", "{N}", peer.base_url(:stream)) / STREAM_EVENTS_PER_CALL
        puts format("libcurl floor per call      %7.1fk", floor_n / 1000.0)
        puts format("chat.ask per call           %7.1fk  (%.2fx the floor)", ask / 1000.0, ask.to_f / floor_n)
        puts format("streamed chunk              %7.1fk", chunk / 1000.0)
      ensure
        peer.stop
      end
    end

    STREAM_EVENTS_PER_CALL = Peer::STREAM_EVENTS
  end
end

Bench::Guard.run if $PROGRAM_NAME == __FILE__
