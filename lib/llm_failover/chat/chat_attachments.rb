# frozen_string_literal: true

require_relative "../attachments/selection"

module LlmFailover
  class Chat
    # Chat's attachments (included in Chat): the files given to #ask checked against
    # the chat's targets, and a stored message's attachments read back in canonical
    # form for the next call.
    module ChatAttachments
      private

      def attachments_for(with)
        Attachment::Selection.prepare(with, targets: engine_targets, allow_private: @config.attachment_private_hosts)
      end

      # A stored message's attachments in canonical form (Attachment::Selection.stored).
      def stored_attachments(message)
        Attachment::Selection.stored(@store, message)
      end
    end
  end
end
