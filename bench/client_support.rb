# frozen_string_literal: true

# What the bench's client scripts share (clients.rb, async_streams.rb): the request,
# the gem's configuration, RSS, and a plain Ruby SSE reader for the clients without
# the gem.

require "json"

MODEL = "gpt-4o-mini"

def request_body(stream: false)
  body = { model: MODEL, messages: [{ role: "user", content: "Hello" }] }
  body[:stream] = true if stream
  JSON.generate(body)
end

HEADERS = { "Content-Type" => "application/json", "Authorization" => "Bearer bench-key" }.freeze

def rss_kb
  File.read("/proc/self/status")[/^VmRSS:\s+(\d+)/, 1].to_i
end

def load_gem
  $LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
  require "llm_failover"
end

def configure_gem(base_url, backup_url: nil, **options)
  LlmFailover.reset_configuration!
  LlmFailover.configure do |c|
    c.provider :bench, api: :openai, api_key: "bench-key", base_url: base_url
    c.provider :backup, api: :openai, api_key: "bench-key", base_url: backup_url if backup_url
    c.usage_log = ->(_record) {} # records on, delivered to a no-op sink
    options.each { |k, v| c.public_send("#{k}=", v) }
  end
end

# The answer's text from a streamed OpenAI body, event by event, as a Ruby client
# without the gem would do it: split events, JSON.parse each, hand the delta on.
class SSEReader
  attr_reader :events

  def initialize(&on_delta)
    @buf = +""
    @on_delta = on_delta
    @events = 0
    @done = false
  end

  def feed(segment)
    @buf << segment
    while (i = @buf.index("\n\n"))
      event = @buf.slice!(0, i + 2)
      event.each_line do |line|
        next unless line.start_with?("data: ")

        data = line[6..].chomp
        if data == "[DONE]"
          @done = true
          next
        end
        delta = JSON.parse(data).dig("choices", 0, "delta", "content")
        next unless delta

        @events += 1
        @on_delta.call(delta)
      end
    end
  end

  def done?
    @done
  end
end

