# frozen_string_literal: true

require "json"
require "net/http"
require "set"

# What a client does with a tool-calling answer, written plainly in Ruby for the specs:
# independent of the gem's C parsers, and applied alike to the recordings and to the
# FakeProvider's answers, so that each checks the other.
module ToolWire
  FIXTURES = File.expand_path("../fixtures/recorded/function_calling", __dir__)
  PATHS = { openai: "/v1/chat/completions", anthropic: "/v1/messages" }.freeze

  Event = Struct.new(:name, :data) do
    def json
      data == "[DONE]" ? nil : JSON.parse(data)
    end
  end

  # A streamed or plain answer as the spec read it; complete is false when the server
  # closed the connection before the body's end.
  Response = Struct.new(:status, :headers, :body, :complete)

  module_function

  # @return [Array<Event>] the stream's events (comment lines dropped)
  def sse(body)
    body.split(/\r?\n\r?\n/).filter_map do |frame|
      name = nil
      data = []
      frame.each_line(chomp: true) do |line|
        next if line.start_with?(":")

        field, value = line.split(":", 2)
        value = value.to_s.delete_prefix(" ")
        name = value if field == "event"
        data << value if field == "data"
      end
      data.empty? ? nil : Event.new(name, data.join("\n"))
    end
  end

  # POSTs JSON and reads the answer whole, even one the server cut short.
  # @return [Response]
  def post(port, path, body)
    Net::HTTP.start("127.0.0.1", port, read_timeout: 10) do |http|
      request = Net::HTTP::Post.new(path, "Content-Type" => "application/json")
      request.body = body.is_a?(String) ? body : JSON.generate(body)
      http.request(request) do |res|
        buf = +""
        complete = begin
          res.read_body { |part| buf << part }
          true
        rescue EOFError, Errno::ECONNRESET
          false
        end
        return Response.new(res.code.to_i, res.to_hash, buf.force_encoding(Encoding::UTF_8), complete)
      end
    end
  end

  # The tool calls of an answer, as [{"id", "name", "arguments" (the JSON text)}],
  # plus its text and stop reason.
  # @return [Hash] "calls", "text", "stop"
  def read_answer(api, body, streamed)
    if streamed
      api.to_s == "anthropic" ? anthropic_stream(body) : openai_stream(body)
    else
      doc = JSON.parse(body)
      if api.to_s == "anthropic"
        blocks = doc["content"]
        calls = blocks.select { |b| b["type"] == "tool_use" }.map do |b|
          input = b["input"]
          { "id" => b["id"], "name" => b["name"], "arguments" => input.is_a?(String) ? input : JSON.generate(input) }
        end
        { "calls" => calls, "text" => blocks.select { |b| b["type"] == "text" }.map { |b| b["text"] }.join,
          "stop" => doc["stop_reason"] }
      else
        message = doc.dig("choices", 0, "message")
        calls = (message["tool_calls"] || []).map do |c|
          { "id" => c["id"], "name" => c.dig("function", "name"), "arguments" => c.dig("function", "arguments") }
        end
        { "calls" => calls, "text" => message["content"].to_s, "stop" => doc.dig("choices", 0, "finish_reason") }
      end
    end
  end

  def anthropic_stream(body)
    blocks = {}
    text = +""
    stop = nil
    sse(body).each do |event|
      j = event.json
      case j["type"]
      when "content_block_start"
        cb = j["content_block"]
        blocks[j["index"]] = { "id" => cb["id"], "name" => cb["name"], "arguments" => +"" } if cb["type"] == "tool_use"
      when "content_block_delta"
        delta = j["delta"]
        text << delta["text"] if delta["type"] == "text_delta"
        blocks.fetch(j["index"])["arguments"] << delta["partial_json"] if delta["type"] == "input_json_delta"
      when "message_delta"
        stop = j.dig("delta", "stop_reason")
      end
    end
    { "calls" => blocks.sort.map(&:last), "text" => text, "stop" => stop }
  end

  def openai_stream(body)
    calls = {}
    text = +""
    stop = nil
    sse(body).each do |event|
      j = event.json
      next if j.nil?

      (j["choices"] || []).each do |choice|
        delta = choice["delta"] || {}
        text << delta["content"].to_s
        (delta["tool_calls"] || []).each do |piece|
          call = calls[piece.fetch("index")] ||= { "id" => nil, "name" => nil, "arguments" => +"" }
          call["id"] ||= piece["id"]
          call["name"] ||= piece.dig("function", "name")
          call["arguments"] << piece.dig("function", "arguments").to_s
        end
        stop ||= choice["finish_reason"]
      end
    end
    { "calls" => calls.sort.map(&:last), "text" => text, "stop" => stop }
  end

  # Every key path of a JSON value ("choices[].delta.tool_calls[].function.name").
  # @return [Set<String>]
  def key_paths(value, prefix = "", into = Set.new)
    case value
    when Hash
      value.each do |k, v|
        path = prefix.empty? ? k : "#{prefix}.#{k}"
        into << path
        key_paths(v, path, into)
      end
    when Array then value.each { |v| key_paths(v, "#{prefix}[]", into) }
    end
    into
  end

  # @return [Array<Hash>] every chat_function_calling recording, parsed
  def recordings
    Dir[File.join(FIXTURES, "chat_function_calling_*.json")].sort.map do |path|
      JSON.parse(File.read(path)).merge("file" => File.basename(path))
    end
  end
end
