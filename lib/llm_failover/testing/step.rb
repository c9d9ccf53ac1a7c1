# frozen_string_literal: true

require "json"
require_relative "canned_errors"

module LlmFailover
  module Testing
    class FakeProvider
      # One validated, frozen script entry. Validation happens at enqueue time so a typo in a
      # test fails at the line that made it, not as a mysterious answer later.
      class Step
        KEYS = %i[
          text chunks model usage finish_reason headers
          status body error retry_after retry_after_ms
          delay_headers delay_first_token chunk_delay
          cut_after stall_after malformed_after error_event_after
          no_done no_terminal reset close
          fixture interaction raw content_type
          tool_call tool_name json tool_calls
          thinking redacted_thinking reasoning_field
          access_token expires_in
        ].freeze

        # Where an OpenAI-compatible answer puts its reasoning: reasoning_content
        # (DeepSeek, and what clients send back), reasoning (Ollama, OpenRouter: the
        # recordings under shared/fixtures/recorded).
        REASONING_FIELDS = %w[reasoning_content reasoning].freeze

        # What a step's answer is made of: at most one of these (text may also come
        # before tool_calls, as models often say something before they call).
        ANSWERS = %i[text tool_call json tool_calls].freeze

        # The keys of one entry of tool_calls:.
        CALL_KEYS = %i[name arguments id chunks].freeze

        # One tool call of an answer: id nil lets the answer make one in the provider's
        # style; chunks are the streamed pieces of arguments (the JSON text).
        Call = Struct.new(:id, :name, :arguments, :chunks)

        # At most one of these says what the body is.
        EXCLUSIVE = %i[fixture raw error body].freeze
        DELAYS = %i[delay_headers delay_first_token chunk_delay retry_after_ms].freeze
        COUNTS = %i[cut_after stall_after malformed_after error_event_after interaction].freeze

        attr_reader :options, :fixture_response

        # @param hash [Hash] the step as the test wrote it (Symbol or String keys)
        # @raise [ArgumentError] unknown keys, wrong types, unreadable fixture
        def initialize(hash)
          raise ArgumentError, "a FakeProvider step is a Hash, got #{hash.inspect}" unless hash.is_a?(Hash)

          opts = hash.each_with_object({}) { |(k, v), h| h[k.respond_to?(:to_sym) ? k.to_sym : k] = v }
          unknown = opts.keys - KEYS
          unless unknown.empty?
            raise ArgumentError, "unknown FakeProvider step key#{'s' if unknown.size > 1} " \
                                 "#{unknown.map(&:inspect).join(', ')} (known: #{KEYS.join(', ')})"
          end
          picked = EXCLUSIVE & opts.keys
          if picked.size > 1
            raise ArgumentError, "a FakeProvider step takes one of #{EXCLUSIVE.join(', ')}; got #{picked.join(' and ')}"
          end

          answers = ANSWERS & opts.keys
          answers -= [:text] if answers.include?(:tool_calls)
          if opts.key?(:tool_calls) && opts.key?(:tool_name)
            raise ArgumentError, "a FakeProvider step names each of its tool_calls itself (name:), not with tool_name"
          end
          if answers.size > 1
            raise ArgumentError, "a FakeProvider step answers with one of #{ANSWERS.join(', ')}; got #{answers.join(' and ')}"
          end

          validate(opts)
          opts[:error] = opts[:error].to_sym if opts.key?(:error)
          @fixture_response = load_fixture(opts[:fixture], opts.fetch(:interaction, 0)) if opts.key?(:fixture)
          @calls = build_calls(opts[:tool_calls]).freeze if opts.key?(:tool_calls)
          @options = opts.freeze
          freeze
        end

        # @return [Object] the option's value or nil
        def [](key)
          @options[key]
        end

        # @return [Boolean] whether the test set this option
        def key?(key)
          @options.key?(key)
        end

        # @return [String] the answer text (a tool call's or a json: step's JSON text)
        def text
          return @options[:text] if @options.key?(:text)
          return "" if @options.key?(:tool_calls)
          return arguments(@options[:tool_call]) if @options.key?(:tool_call)
          return JSON.generate(@options[:json]) if @options.key?(:json)
          return @options[:chunks].join if @options.key?(:chunks)

          DEFAULT_TEXT
        end

        # What the model thought before it answered, as each protocol sends it: nil, or
        # { text:, chunks:, signature:, redacted:, field: }. Anthropic: a thinking block
        # (its text, then a signature) and a redacted_thinking block (opaque data),
        # before the text and the tool calls; OpenAI-compatible: the text in the
        # message's (or each delta's) reasoning_content or reasoning; a redacted block
        # has no OpenAI form and is left out there.
        # @return [Hash, nil]
        def thinking
          return nil unless @options.key?(:thinking) || @options.key?(:redacted_thinking)

          text = @options[:thinking]
          redacted = @options[:redacted_thinking]
          { text: text, chunks: text ? text.scan(/\s*\S+\s*/) : [],
            signature: text ? "sig_#{[text].pack('m0')[0, 24]}" : nil,
            redacted: redacted == true ? "EncryptedThinkingData==" : redacted,
            field: @options[:reasoning_field] || REASONING_FIELDS.first }
        end

        # @return [Array<String>] the content deltas of a streamed answer; joined they equal #text
        # unless the test gave explicit chunks
        def chunks
          return @options[:chunks] if @options.key?(:chunks)
          # JSON in pieces of a few characters, cutting keys and strings as a model does.
          return text.scan(/.{1,6}/m) if @options.key?(:tool_call) || @options.key?(:json)

          words = text.scan(/\s*\S+\s*/)
          words.empty? && !text.empty? ? [text] : words
        end

        # What the answer to +request_json+ is made of: its text, the text's streamed
        # pieces, and its tool calls (empty for a text answer).
        # @return [Array(String, Array<String>, Array<Call>)]
        def answer_for(request_json)
          return [text, chunks, @calls] if @options.key?(:tool_calls)

          name = tool_for(request_json)
          return [text, chunks, []] unless name

          ["", [], [Call.new(nil, name, text, chunks).freeze]]
        end

        # The tool a request forces, or nil: Anthropic's tool_choice {"type": "tool", "name"},
        # OpenAI's {"type": "function", "function": {"name"}}, the Responses API's
        # {"type": "function", "name"}, Bedrock's toolConfig {"toolChoice": {"tool": {"name"}}},
        # Gemini's toolConfig {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames":
        # [name]}}.
        # @return [String, nil]
        def self.forced_tool(json)
          config = json["toolConfig"] if json.is_a?(Hash)
          if config.is_a?(Hash)
            bedrock = config["toolChoice"]["tool"] if config["toolChoice"].is_a?(Hash)
            return bedrock["name"] if bedrock.is_a?(Hash) && bedrock["name"].is_a?(String)

            gemini = config["functionCallingConfig"]
            if gemini.is_a?(Hash) && gemini["mode"] == "ANY" && gemini["allowedFunctionNames"].is_a?(Array) &&
               gemini["allowedFunctionNames"].size == 1
              return gemini["allowedFunctionNames"].first
            end
          end

          choice = json["tool_choice"] if json.is_a?(Hash)
          return nil unless choice.is_a?(Hash)
          return choice["name"] if %w[tool function].include?(choice["type"]) && choice["name"].is_a?(String)

          name = choice.dig("function", "name") if choice["type"] == "function" && choice["function"].is_a?(Hash)
          name.is_a?(String) ? name : nil
        end

        # The tool this step calls when answering +request_json+, or nil for text:
        # tool_call: always calls one (tool_name:, else the one the request forces, else
        # "answer"); json: calls the forced tool when there is one, else answers as text.
        # @return [String, nil]
        def tool_for(request_json)
          forced = Step.forced_tool(request_json)
          return @options[:tool_name] || forced || "answer" if @options.key?(:tool_call)
          return forced if @options.key?(:json)

          nil
        end

        private

        # tool_call: a Hash/Array is the arguments object; a String goes out verbatim.
        def arguments(value)
          value.is_a?(String) ? value : JSON.generate(value)
        end

        def build_calls(list)
          list.each_with_index.map do |entry, i|
            where = "FakeProvider step tool_calls[#{i}]"
            raise ArgumentError, "#{where}: a Hash, got #{entry.inspect}" unless entry.is_a?(Hash)

            call = entry.transform_keys(&:to_sym)
            unknown = call.keys - CALL_KEYS
            raise ArgumentError, "#{where}: unknown key #{unknown.first.inspect} (known: #{CALL_KEYS.join(', ')})" if unknown.any?

            name = call[:name]
            raise ArgumentError, "#{where}: name must be a non-empty String" unless name.is_a?(String) && !name.empty?

            id = call[:id]
            raise ArgumentError, "#{where}: id must be a non-empty String" unless id.nil? || (id.is_a?(String) && !id.empty?)

            pieces = call[:chunks]
            unless pieces.nil? || (pieces.is_a?(Array) && pieces.all?(String))
              raise ArgumentError, "#{where}: chunks must be an Array of Strings"
            end

            args = call.key?(:arguments) ? call[:arguments] : (pieces ? pieces.join : {})
            unless args.is_a?(Hash) || args.is_a?(Array) || args.is_a?(String)
              raise ArgumentError, "#{where}: arguments must be a Hash, an Array or a String (sent verbatim)"
            end

            args = arguments(args)
            Call.new(id&.dup&.freeze, name.dup.freeze, args.freeze, (pieces || args.scan(/.{1,6}/m)).freeze).freeze
          end
        end

        def validate(opts)
          check(opts, :text) { |v| v.is_a?(String) }
          check(opts, :chunks) { |v| v.is_a?(Array) && v.all?(String) }
          check(opts, :model) { |v| v.is_a?(String) }
          check(opts, :finish_reason) { |v| v.is_a?(String) }
          check(opts, :headers) { |v| v.is_a?(Hash) }
          check(opts, :status) { |v| v.is_a?(Integer) && v.between?(100, 599) }
          check(opts, :body) { |v| v.is_a?(String) || v.is_a?(Hash) || v.is_a?(Array) }
          check(opts, :raw) { |v| v.is_a?(String) }
          check(opts, :content_type) { |v| v.is_a?(String) }
          check(opts, :tool_call) { |v| v.is_a?(Hash) || v.is_a?(Array) || v.is_a?(String) }
          check(opts, :tool_name) { |v| v.is_a?(String) && !v.empty? }
          check(opts, :json) { |v| v.is_a?(Hash) || v.is_a?(Array) }
          check(opts, :thinking) { |v| v.is_a?(String) && !v.strip.empty? }
          check(opts, :redacted_thinking) { |v| v == true || (v.is_a?(String) && !v.empty?) }
          check(opts, :reasoning_field) { |v| REASONING_FIELDS.include?(v) }
          check(opts, :tool_calls) { |v| v.is_a?(Array) && !v.empty? }
          check(opts, :retry_after) { |v| (v.is_a?(Numeric) && v >= 0) || v.is_a?(String) }
          check(opts, :fixture) { |v| v.is_a?(String) || v.is_a?(Hash) || v.respond_to?(:to_path) }
          # thoughts and cached: Gemini's thoughtsTokenCount and cachedContentTokenCount.
          check(opts, :usage) do |v|
            v.is_a?(Hash) && (v.keys.map(&:to_sym) - %i[input output thoughts cached]).empty? &&
              v.values.all? { |n| n.is_a?(Integer) && n >= 0 }
          end
          check(opts, :access_token) { |v| v.is_a?(String) && !v.empty? }
          check(opts, :expires_in) { |v| v.is_a?(Integer) && v >= 0 }
          check(opts, :error) { |v| v.respond_to?(:to_sym) && CannedErrors::NAMES.include?(v.to_sym) }
          DELAYS.each { |k| check(opts, k) { |v| v.is_a?(Numeric) && v >= 0 } }
          COUNTS.each { |k| check(opts, k) { |v| v.is_a?(Integer) && v >= 0 } }
        end

        def check(opts, key)
          return unless opts.key?(key)
          return if yield(opts[key])

          hint = key == :error ? " (one of #{CannedErrors::NAMES.map(&:inspect).join(', ')})" : ""
          raise ArgumentError, "FakeProvider step #{key}: #{opts[key].inspect} is not valid#{hint}"
        end

        # @return [Hash] {status:, headers:, body:} of the recorded interaction
        def load_fixture(fixture, index)
          doc = if fixture.is_a?(Hash)
                  fixture
                else
                  path = fixture.respond_to?(:to_path) ? fixture.to_path : fixture
                  begin
                    JSON.parse(File.read(path))
                  rescue SystemCallError, JSON::ParserError => e
                    raise ArgumentError, "FakeProvider fixture #{path}: #{e.message}"
                  end
                end
          interactions = doc["interactions"] || doc[:interactions]
          unless interactions.is_a?(Array) && interactions[index].is_a?(Hash)
            raise ArgumentError, "FakeProvider fixture has no interaction #{index}"
          end

          response = interactions[index]["response"] || interactions[index][:response]
          raise ArgumentError, "FakeProvider fixture interaction #{index} has no response" unless response.is_a?(Hash)

          status = response["status"] || response[:status]
          headers = response["headers"] || response[:headers] || {}
          body = response.key?("body") ? response["body"] : response[:body]
          body = JSON.generate(body) if body.is_a?(Hash) || body.is_a?(Array)
          # A binary body (a ConverseStream's event stream) is recorded as base64.
          body = body.to_s.unpack1("m") if (response["encoding"] || response[:encoding]) == "base64"
          { status: Integer(status), headers: headers.transform_keys(&:to_s).freeze, body: body.to_s.b.freeze }.freeze
        end
      end
    end
  end
end
