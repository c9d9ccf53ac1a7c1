# frozen_string_literal: true

require "json"

module LlmFailover
  # One call of a tool that a model asked for, and what became of it: the record the
  # loop keeps (reply.tool_calls), stores (a tool_calls row) and renders back to either
  # protocol as the call and its result.
  #
  # Statuses, in the order a call goes through them:
  #   pending   asked for, not run yet (or waiting for approval: see #awaiting_approval?)
  #   approved  approved, will run
  #   running   stored as running before #execute is called (a crash leaves it so)
  #   succeeded #result holds the tool's value, #content what the model gets
  #   failed    #execute raised a StandardError: #error says what (class and message)
  #   rejected  never run: the arguments or the tool name were wrong, #error says why
  #   denied    never run: a person said no, #error holds the reason
  # The last four are final: each sends the model exactly one result.
  class ToolCall
    STATUSES = %i[pending approved running succeeded failed rejected denied].freeze
    FINAL = %i[succeeded failed rejected denied].freeze

    # What went wrong with a call, as the model is told and the app can read it. Never
    # a backtrace: the model does not need it and it may hold paths and secrets.
    # class_name is the raised exception's class (nil when the call never ran).
    Failure = Struct.new(:kind, :class_name, :message, keyword_init: true) do
      # @return [String] "RuntimeError: boom", or the message alone
      def to_s
        class_name ? "#{class_name}: #{message}" : message.to_s
      end
    end

    # @return [String] the call's id in the canonical transcript
    attr_reader :id
    # @return [String] the id the provider gave (the same as #id unless it was mapped)
    attr_reader :provider_id
    # @return [String] the tool's name as the model wrote it
    attr_reader :name
    # @return [String] the arguments' JSON text as the model wrote it
    attr_reader :arguments_json
    # @return [Symbol, String, nil] the provider whose turn asked for the call
    attr_reader :provider
    # @return [String, nil] the model that asked for it
    attr_reader :model
    # @return [Symbol] see STATUSES
    attr_reader :status
    # @return [Object] what #execute returned (succeeded), or the settled result
    attr_reader :result
    # @return [String, nil] what the model is sent as the result (final calls)
    attr_reader :content
    # @return [Failure, nil]
    attr_reader :error
    # @return [String, nil] the host's signature of the call (Gemini's thoughtSignature):
    #   part of its answer's reasoning state (Reasoning), sent back to that host only;
    #   opaque, never shown
    attr_reader :signature

    # @param id [String]
    # @param name [String]
    # @param arguments [String, Hash] the JSON text (OpenAI sends text, and a model may
    #   send text that is not JSON), or the object (Anthropic sends one)
    # @param provider_id [String, nil] defaults to id
    def initialize(id:, name:, arguments:, provider_id: nil, provider: nil, model: nil, status: :pending,
                   signature: nil)
      raise ArgumentError, "a tool call id is a non-empty String, got #{id.inspect}" unless id.is_a?(String) && !id.empty?
      raise ArgumentError, "a tool call name is a String, got #{name.inspect}" unless name.is_a?(String)

      @id = id.dup.freeze
      @provider_id = (provider_id || id).dup.freeze
      @name = name.dup.freeze
      @arguments_json = (arguments.is_a?(String) ? arguments : JSON.generate(arguments)).dup.freeze
      @provider = provider
      @model = model
      @signature = signature&.dup&.freeze
      self.status = status
    end

    # The arguments parsed, or nil when they are not a JSON object.
    # @return [Hash, nil]
    def arguments
      return @arguments if defined?(@arguments)

      parsed = begin
        # An empty text is how a call without arguments streams on Anthropic.
        @arguments_json.strip.empty? ? {} : JSON.parse(@arguments_json)
      rescue JSON::ParserError, EncodingError
        nil
      end
      @arguments = parsed.is_a?(Hash) ? parsed.freeze : nil
    end

    # @return [Boolean] whether the call has its one result
    def final?
      FINAL.include?(@status)
    end

    # @return [Boolean] whether the model is told the call failed (Anthropic is_error)
    def error?
      !@error.nil?
    end

    # @return [Boolean] waiting for a person: not run, not final, not approved
    def awaiting_approval?
      @status == :pending && @awaiting_approval == true
    end

    # @api private: the loop parks a call of a requires_approval! tool
    def await_approval!
      expect_status(:pending)
      @awaiting_approval = true
      self
    end

    # @return [self]
    def approve!
      expect_status(:pending)
      @awaiting_approval = false
      self.status = :approved
      self
    end

    # Stored before #execute is called, so a crash leaves the call visibly running.
    # @return [self]
    def start!
      expect_status(:pending, :approved)
      self.status = :running
      self
    end

    # @param value [Object] what #execute returned
    # @return [self]
    def succeed!(value)
      expect_status(:running)
      finish(:succeeded, result: value, content: ToolCall.serialize(value))
    end

    # @param exception [StandardError] what #execute raised
    # @return [self]
    def fail!(exception)
      expect_status(:running)
      failure = Failure.new(kind: :raised, class_name: exception.class.name, message: exception.message.to_s)
      finish(:failed, error: failure, content: failure.to_s)
    end

    # The call was not run: bad arguments or an unknown tool.
    # @param message [String] what the model is told
    # @return [self]
    def reject!(message, kind: :arguments)
      expect_status(:pending, :approved)
      failure = Failure.new(kind: kind, class_name: nil, message: message)
      finish(:rejected, error: failure, content: message)
    end

    # @param reason [String] what the model is told
    # @return [self]
    def deny!(reason)
      expect_status(:pending)
      failure = Failure.new(kind: :denied, class_name: nil, message: "The user denied this call: #{reason}")
      finish(:denied, error: failure, content: failure.message)
    end

    # Gives a call left running by a crash its outcome, from what the app knows.
    # @return [self]
    def settle!(result: nil, error: nil)
      expect_status(:running)
      raise ArgumentError, "settle a tool call with result: or error:, not both" if !result.nil? && !error.nil?

      if error.nil?
        finish(:succeeded, result: result, content: ToolCall.serialize(result))
      else
        failure = Failure.new(kind: :settled, class_name: nil, message: error.to_s)
        finish(:failed, error: failure, content: failure.message)
      end
    end

    # A tool's value as the model gets it: a String as it is, anything else as JSON.
    # @return [String] valid UTF-8
    def self.serialize(value)
      text = value.is_a?(String) ? value : JSON.generate(value)
      text = text.dup.force_encoding(Encoding::UTF_8) unless text.encoding == Encoding::UTF_8
      text.valid_encoding? ? text : text.scrub("\uFFFD")
    end

    # @return [Hash] String keys, JSON values: what a store keeps
    def to_h
      { "id" => @id, "provider_id" => @provider_id, "name" => @name, "arguments" => @arguments_json,
        "provider" => @provider&.to_s, "model" => @model, "status" => @status.to_s,
        "awaiting_approval" => @awaiting_approval == true, "content" => @content,
        "error" => @error && { "kind" => @error.kind.to_s, "class_name" => @error.class_name,
                               "message" => @error.message }, "signature" => @signature }
    end

    # The inverse of #to_h. A succeeded call's #result comes back as its serialised
    # text (#content): the Ruby value itself is not stored.
    # @return [ToolCall]
    def self.from_h(hash)
      h = hash.transform_keys(&:to_s)
      call = new(id: h.fetch("id"), name: h.fetch("name"), arguments: h.fetch("arguments"),
                 provider_id: h["provider_id"], provider: h["provider"]&.to_sym, model: h["model"],
                 status: h.fetch("status").to_sym, signature: h["signature"])
      call.restore(h)
    end

    # @api private
    def restore(h)
      @awaiting_approval = h["awaiting_approval"] == true
      @content = h["content"]&.dup&.freeze
      @result = @content if @status == :succeeded
      err = h["error"]&.transform_keys(&:to_s)
      @error = err && Failure.new(kind: err["kind"]&.to_sym, class_name: err["class_name"], message: err["message"])
      self
    end

    def inspect
      "#<#{self.class.name} #{@id} #{@name} #{@status}>"
    end

    private

    def status=(value)
      raise ArgumentError, "a tool call status is one of #{STATUSES.join(', ')}, got #{value.inspect}" unless STATUSES.include?(value)

      @status = value
    end

    def expect_status(*allowed)
      return if allowed.include?(@status)

      raise ArgumentError, "tool call #{@id} (#{@name}) is #{@status}, not #{allowed.join(' or ')}"
    end

    def finish(status, result: nil, content: nil, error: nil)
      @result = result
      @content = content.frozen? ? content : content.dup.freeze
      @error = error
      self.status = status
      self
    end
  end
end
